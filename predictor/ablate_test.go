package predictor

import "github.com/migpro/migpro/predictor/internal/ablate"

// switchOff returns c with the readings in s switched off when off is true.
func switchOff(c Config, off bool, s ablate.Switch) Config {
	if off {
		c.off |= s
	}
	return c
}
