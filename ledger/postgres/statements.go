package postgres

import (
	"strconv"
	"strings"
)

// statements are the SQL texts of the ledger's calls, with the schema
// filled in. Each write is one call of one of the functions that the
// migrations define (one statement, one implicit transaction, one round
// trip); each read is one SELECT, so it sees one snapshot.
type statements struct {
	createOperation, startAttempt, launchAttempt, redeemBootstrap, admit,
	beginEffect, settleEffect, acceptResult, cancel, recordAttempt, takeOver string
	// The lease writes, which run as transactions of their own (lease.go).
	acquireLease, renewLease, releaseLease string

	view, listUnknown, listInFlight, leases, artifact, evidence string
	// listOperations is the statement of ListOperations without its WHERE,
	// ORDER BY and LIMIT, which depend on the query.
	listOperations string
	// orphaned is ListOperations' condition for OperationQuery.Orphaned.
	orphaned string
}

func newStatements(schema string) statements {
	call := func(fn string, params int) string {
		var b strings.Builder
		b.WriteString("SELECT * FROM ")
		b.WriteString(schema)
		b.WriteString(".")
		b.WriteString(fn)
		b.WriteString("(")
		for i := 1; i <= params; i++ {
			if i > 1 {
				b.WriteString(", ")
			}
			b.WriteString("$")
			b.WriteString(strconv.Itoa(i))
		}
		b.WriteString(")")
		return b.String()
	}
	q := func(sql string) string { return strings.ReplaceAll(sql, schemaPlaceholder, schema) }
	return statements{
		createOperation: call("create_operation", 9),
		startAttempt:    call("start_attempt", 4),
		launchAttempt:   call("launch_attempt", 14),
		redeemBootstrap: call("redeem_bootstrap", 9),
		admit:           call("admit", 6),
		beginEffect:     call("begin_effect", 8),
		settleEffect:    call("settle_effect", 10),
		acceptResult:    call("accept_result", 9),
		cancel:          call("cancel", 4),
		recordAttempt:   call("record_attempt", 6),
		takeOver:        call("take_over", 7),
		acquireLease:    call("acquire_lease", 2),
		renewLease:      call("renew_lease", 2),
		releaseLease:    call("release_lease", 1),
		view:            q(viewSQL),
		listUnknown:     q(listUnknownSQL),
		listInFlight:    q(listInFlightSQL),
		leases:          q(leasesSQL),
		artifact:        q(artifactSQL),
		evidence:        q(evidenceSQL),
		listOperations:  q(listOperationsSQL),
		orphaned:        q(orphanedSQL),
	}
}

// viewSQL reads an operation with its attempts, bootstrap ids and effects
// in one statement: each list is one array per column, in the order the
// view wants.
const viewSQL = `
SELECT o.capability_id, o.request_digest, o.manifest_digest, o.effect_budget, o.deadline_sec, o.deadline_nsec,
	o.state, o.cancel_reason, o.effects_used, o.attempt_id, o.generation,
	o.result_digest, o.result_ref, o.result_generation, coalesce(o.controller_id, ''::bytea),
	a.ids, a.gens, a.admitted, a.controllers,
	b.ids, b.gens, b.launches, b.pids, b.sessions,
	e.ids, e.digests, e.auths, e.states, e.receipts, e.reasons, e.gens, e.ordinals, e.controllers
FROM __SCHEMA__.operations o
CROSS JOIN LATERAL (
	SELECT array_agg(attempt_id ORDER BY generation) AS ids, array_agg(generation ORDER BY generation) AS gens,
		array_agg(admitted ORDER BY generation) AS admitted,
		array_agg(coalesce(controller_id, ''::bytea) ORDER BY generation) AS controllers
	FROM __SCHEMA__.attempts WHERE op_pk = o.op_pk) a
CROSS JOIN LATERAL (
	SELECT array_agg(bootstrap_id ORDER BY bootstrap_id) AS ids, array_agg(generation ORDER BY bootstrap_id) AS gens,
		array_agg(launch_digest ORDER BY bootstrap_id) AS launches,
		array_agg(coalesce(redeemed_pid, 0) ORDER BY bootstrap_id) AS pids,
		array_agg(coalesce(redeemed_session, ''::bytea) ORDER BY bootstrap_id) AS sessions
	FROM __SCHEMA__.bootstraps WHERE op_pk = o.op_pk) b
CROSS JOIN LATERAL (
	SELECT array_agg(effect_id ORDER BY effect_id) AS ids, array_agg(request_digest ORDER BY effect_id) AS digests,
		array_agg(authorization_id ORDER BY effect_id) AS auths, array_agg(state ORDER BY effect_id) AS states,
		array_agg(coalesce(receipt_id, ''::bytea) ORDER BY effect_id) AS receipts,
		array_agg(coalesce(reason, '') ORDER BY effect_id) AS reasons,
		array_agg(generation ORDER BY effect_id) AS gens, array_agg(ordinal ORDER BY effect_id) AS ordinals,
		array_agg(coalesce(controller_id, ''::bytea) ORDER BY effect_id) AS controllers
	FROM __SCHEMA__.effects WHERE op_pk = o.op_pk) e
WHERE o.org_id = $1 AND o.project_id = $2 AND o.operation_id = $3`

// listUnknownSQL lists the effects that need reconciliation through the
// partial index of unsettled effects: the unknown ones, and the authorized
// ones whose controller holds no live lease by the server's clock (one
// reading for the whole list). Ordered by scope, operation id and effect
// id (bytea orders bytewise, as Go orders strings).
const listUnknownSQL = `
SELECT o.org_id, o.project_id, o.operation_id, e.effect_id, e.request_digest, e.authorization_id, e.state,
	e.attempt_id, e.generation, e.ordinal, coalesce(e.controller_id, ''::bytea)
FROM __SCHEMA__.effects e
JOIN __SCHEMA__.operations o ON o.op_pk = e.op_pk
WHERE e.state IN ('authorized', 'unknown')
	AND (e.state = 'unknown' OR NOT EXISTS (SELECT 1 FROM __SCHEMA__.leases l
		WHERE l.controller_id = e.controller_id AND NOT l.released AND (SELECT clock_timestamp()) < l.expires))
ORDER BY o.org_id, o.project_id, o.operation_id, e.effect_id`

// listInFlightSQL lists the authorized effects whose controller holds a
// live lease, ordered as listUnknownSQL.
const listInFlightSQL = `
SELECT o.org_id, o.project_id, o.operation_id, e.effect_id, e.request_digest, e.authorization_id, e.state,
	e.attempt_id, e.generation, e.ordinal, coalesce(e.controller_id, ''::bytea)
FROM __SCHEMA__.effects e
JOIN __SCHEMA__.operations o ON o.op_pk = e.op_pk
JOIN __SCHEMA__.leases l ON l.controller_id = e.controller_id
WHERE e.state = 'authorized'
	AND NOT l.released AND (SELECT clock_timestamp()) < l.expires
ORDER BY o.org_id, o.project_id, o.operation_id, e.effect_id`

// leasesSQL lists the leases with their liveness by the server's clock.
const leasesSQL = `
SELECT controller_id, acquired, expires, ttl_nsec, renewals, released,
	NOT released AND (SELECT clock_timestamp()) < expires
FROM __SCHEMA__.leases
ORDER BY controller_id`

const artifactSQL = `
SELECT o.org_id, o.project_id, o.operation_id, a.digest, a.bytes
FROM __SCHEMA__.artifacts a JOIN __SCHEMA__.operations o ON o.op_pk = a.op_pk
WHERE a.ref = $1`

// evidenceSQL answers no row when the operation does not exist, and one
// row with a NULL document when it has no evidence.
const evidenceSQL = `
SELECT e.doc
FROM __SCHEMA__.operations o LEFT JOIN __SCHEMA__.evidence e ON e.op_pk = o.op_pk
WHERE o.org_id = $1 AND o.project_id = $2 AND o.operation_id = $3
ORDER BY e.generation`

const listOperationsSQL = `
SELECT org_id, project_id, operation_id, capability_id, request_digest, manifest_digest, effect_budget,
	deadline_sec, deadline_nsec, state, cancel_reason, effects_used, attempt_id, generation,
	coalesce(controller_id, ''::bytea)
FROM __SCHEMA__.operations o`

// orphanedSQL is ListOperations' condition for Orphaned: the operation is
// open, has an attempt, and its current attempt's controller holds no
// live lease (none at all included).
const orphanedSQL = `state = 'open' AND generation > 0 AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.leases l
	WHERE l.controller_id = o.controller_id AND NOT l.released AND (SELECT clock_timestamp()) < l.expires)`
