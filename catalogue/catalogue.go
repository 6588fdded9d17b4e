package catalogue

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"sync"
	"time"

	"github.com/zeoruntime/runtimeipc/canon"
	"github.com/zeoruntime/runtimeipc/ledger"
	"github.com/zeoruntime/runtimeipc/ledger/cataloguestore"
	"github.com/zeoruntime/runtimeipc/manifest"
)

// Store is what a Catalogue keeps its records in: a ledger whose backend
// also implements cataloguestore.Store (ledger/memory, ledger/bolt and
// ledger/postgres all do). Pass the same value the Supervisor uses, so that
// reservations are fenced by the same attempts.
type Store interface {
	ledger.Ledger
	cataloguestore.Store
}

// DiscoverFunc runs the host's own static discovery (`describe`) for a
// binding and returns the manifest digest the host reported.
// agent.Discover makes one from a launch.Launcher.
type DiscoverFunc func(ctx context.Context, b manifest.ProviderBinding) (canon.Digest, error)

// DefaultPollInterval is the longest a Reserve waiting for a reservation
// held by another controller sleeps between two tries. A release in the
// same process wakes it at once.
const DefaultPollInterval = 50 * time.Millisecond

// Config configures a Catalogue. New validates and copies it.
type Config struct {
	// Store holds the catalogue's records. Required.
	Store Store
	// Discover runs the host's static discovery at admission. Required.
	Discover DiscoverFunc
	// Validator validates bindings and reads arguments; nil means a new
	// one.
	Validator *manifest.Validator
	// PollInterval bounds the sleep between two tries of a waiting
	// Reserve; zero means DefaultPollInterval.
	PollInterval time.Duration
	// Logger receives warnings; nil means none.
	Logger *slog.Logger
}

// Catalogue is the Runtime's record of admitted providers. It is safe for
// concurrent use, and any number of Catalogues (in one process or many)
// may share one Store: every decision is read from the store, and the
// in-memory index of capabilities is refreshed whenever the store's
// catalogue revision moves.
type Catalogue struct {
	store     Store
	discover  DiscoverFunc
	validator *manifest.Validator
	poll      time.Duration
	log       *slog.Logger

	mu       sync.Mutex             // guards snap, gens and released
	snap     *snapshot              // the latest generations at one revision
	gens     map[genKey]*generation // documents of pinned generations, immutable once loaded
	released chan struct{}          // closed and replaced by each Release in this process
}

type genKey struct {
	p   cataloguestore.ProviderKey
	gen int64
}

// New validates cfg and returns a Catalogue. Errors wrap ErrInvalidConfig.
func New(cfg Config) (*Catalogue, error) {
	var errs []error
	if cfg.Store == nil {
		errs = append(errs, errors.New("Store is nil"))
	}
	if cfg.Discover == nil {
		errs = append(errs, errors.New("Discover is nil"))
	}
	if cfg.PollInterval < 0 {
		errs = append(errs, fmt.Errorf("PollInterval %v is negative", cfg.PollInterval))
	}
	if len(errs) > 0 {
		return nil, fmt.Errorf("%w: %w", ErrInvalidConfig, errors.Join(errs...))
	}
	c := &Catalogue{store: cfg.Store, discover: cfg.Discover, validator: cfg.Validator, poll: cfg.PollInterval,
		log: cfg.Logger, gens: map[genKey]*generation{}, released: make(chan struct{})}
	if c.validator == nil {
		c.validator = &manifest.Validator{}
	}
	if c.poll == 0 {
		c.poll = DefaultPollInterval
	}
	if c.log == nil {
		c.log = slog.New(slog.DiscardHandler)
	}
	return c, nil
}
