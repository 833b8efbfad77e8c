package agent

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/migpro/migpro/client"
)

// TestOwnerWithControlCharactersRefused: an owner is printed by `migctl
// status` and in logs; a newline in it forged lines there. The local API
// answers 400 and allocates nothing.
func TestOwnerWithControlCharactersRefused(t *testing.T) {
	e := newEnv(t, "a100-40gb")
	c := runAgent(t, e.start(t))
	ctx := context.Background()
	for _, owner := range []string{"a\nGPU 9 forged", "a\r\nb", "tab\there", "esc\x1b[31m", "nul\x00", "del\x7f", strings.Repeat("x", maxOwner+1), "line\u2028sep"} {
		_, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: owner})
		var bad *client.BadRequestError
		if !errors.As(err, &bad) {
			t.Errorf("owner %q: %v, want a 400", owner, err)
		}
	}
	st, err := c.Status(ctx)
	if err != nil || len(st.Instances) != 0 {
		t.Fatalf("refused allocations left instances: %+v %v", st.Instances, err)
	}
	if _, err := c.Alloc(ctx, client.AllocRequest{Profile: "1g.5gb", Owner: "team-a job 7 (ü)"}); err != nil {
		t.Fatalf("a printable owner: %v", err)
	}
}
