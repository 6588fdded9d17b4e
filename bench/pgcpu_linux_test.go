//go:build linux

package bench

import (
	"context"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"
)

// clockTicks is the unit of /proc/<pid>/stat's CPU times (USER_HZ, 100 on
// every Linux configuration Go supports).
const clockTicks = 100

// backendCPU returns the CPU time (user + system) used so far by the
// PostgreSQL backends whose sessions carry application_name app, read from
// /proc: the server's side of what the sessions asked for. ok is false
// when the server's processes cannot be read here (another machine or
// PID namespace).
func backendCPU(ctx context.Context, pool *pgxpool.Pool, app string) (cpu time.Duration, ok bool) {
	rows, err := pool.Query(ctx, "SELECT pid FROM pg_stat_activity WHERE application_name = $1", app)
	if err != nil {
		return 0, false
	}
	var pids []int
	for rows.Next() {
		var pid int
		if rows.Scan(&pid) == nil {
			pids = append(pids, pid)
		}
	}
	rows.Close()
	if rows.Err() != nil || len(pids) == 0 {
		return 0, false
	}
	var ticks int64
	for _, pid := range pids {
		b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
		if err != nil {
			return 0, false
		}
		// The command name (field 2) is in parentheses and may hold
		// spaces: count fields after its closing one.
		s := string(b)
		f := strings.Fields(s[strings.LastIndexByte(s, ')')+1:])
		if len(f) < 13 {
			return 0, false
		}
		utime, err1 := strconv.ParseInt(f[11], 10, 64)
		stime, err2 := strconv.ParseInt(f[12], 10, 64)
		if err1 != nil || err2 != nil {
			return 0, false
		}
		ticks += utime + stime
	}
	return time.Duration(ticks) * time.Second / clockTicks, true
}
