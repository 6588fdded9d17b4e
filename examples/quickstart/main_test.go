package main

import (
	"testing"

	"github.com/zeoruntime/runtimeipc/examples/internal/extest"
)

func TestMain(m *testing.M) { extest.Main(m) }

func TestQuickstart(t *testing.T) {
	extest.Output(t, run, `echo: succeeded, artifact {"text":"hello"}
two_effects: succeeded, budget 2 of 2 used
  effect-1: confirmed, receipt receipt-effect-1
  effect-2: confirmed, receipt receipt-effect-2
again: succeeded, reconnected true, launched false, same result true
`)
}
