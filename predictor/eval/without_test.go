package eval

import (
	"github.com/migpro/migpro/predictor"
	"github.com/migpro/migpro/predictor/internal/ablate"
)

// without returns c with the readings in s switched off, for the
// ablations: the switches are no part of predictor.Config's public API.
func without(c predictor.Config, s ablate.Switch) predictor.Config {
	return ablate.Without(c, s).(predictor.Config)
}
