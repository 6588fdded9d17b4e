//go:build !linux

package bench

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// backendCPU is not measured on this platform.
func backendCPU(context.Context, *pgxpool.Pool, string) (time.Duration, bool) { return 0, false }
