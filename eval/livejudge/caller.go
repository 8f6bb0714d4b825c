package livejudge

import (
	"context"

	openai "github.com/sashabaranov/go-openai"

	"github.com/conductor-shadow/conductor-shadow/shadow"
)

// CappedCaller is c with every call's completion tokens capped at maxOutput:
// each call runs under its own shadow.Budget{MaxOutputTokens: maxOutput}, so
// the pool sends max_tokens (max_completion_tokens) of at most maxOutput —
// the output side of UpperBoundUSD.
func CappedCaller(c shadow.Caller, maxOutput int) shadow.Caller {
	return cappedCaller{c: c, max: int64(maxOutput)}
}

type cappedCaller struct {
	c   shadow.Caller
	max int64
}

func (c cappedCaller) Call(ctx context.Context, worker string, msgs []openai.ChatCompletionMessage) (shadow.Call, error) {
	bctx, _, stop := shadow.WithBudget(ctx, shadow.Budget{MaxOutputTokens: c.max})
	defer stop()
	return c.c.Call(bctx, worker, msgs)
}
