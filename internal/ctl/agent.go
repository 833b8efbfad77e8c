package ctl

import (
	"errors"

	"github.com/migpro/migpro/client"
)

// AgentErr turns the agent's refusal of bad input into a UsageError (exit 2).
func AgentErr(err error) error {
	var bad *client.BadRequestError
	if errors.As(err, &bad) {
		return UsageError{Err: err}
	}
	return err
}
