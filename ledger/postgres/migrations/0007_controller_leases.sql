-- Schema version 7: controller leases (doc/design.md, "Controllers and
-- leases"). A controller holds a lease under an id of its own; every
-- attempt it launches or takes over names it, and so does every effect
-- such an attempt authorizes. Liveness is judged by the server's clock,
-- clock_timestamp(), inside the transaction that depends on it: a lease
-- is live while it is not released and clock_timestamp() < expires, and
-- the expiry is the server's clock plus the ttl at acquisition and at
-- every renewal.
--
-- Liveness only ever ends: a lease that expired or was released is never
-- renewed or acquired again. So a decision that a lease is live may be
-- read from the committed row as it is; a decision that it is not live
-- (which lets Resolve settle an authorized effect, TakeOver fence an
-- attempt off, or refuses a launch or an effect with ErrLeaseExpired) is
-- made only under a FOR SHARE lock of the lease's row, with the clock read
-- after the lock is held (lease_check). A renewal locks the row FOR NO
-- KEY UPDATE and reads the clock after that: a renewal that was under way
-- commits before the decision and is seen by it, one that comes later
-- reads a later clock and is refused. Lease writes (acquire, renew,
-- release) are transactions of their own that lock nothing but their
-- lease's row (see lease.go).
--
-- The attempt's controller is kept in the attempt's row, the current
-- attempt's in the operation's row (as its id and generation are), and
-- the authorizing attempt's in the effect's row (as its attempt id is):
-- an authorization finds its controller in the row it debits, and
-- ListUnknown, ListInFlight and ListOperations judge liveness with one
-- lookup of the lease by its key. NULL is no controller: every attempt
-- and effect recorded before this version, and attempts of StartAttempt,
-- have none and no live owner.

CREATE TABLE __SCHEMA__.leases (
	controller_id bytea       PRIMARY KEY,
	acquired      timestamptz NOT NULL,
	expires       timestamptz NOT NULL,
	-- The ttl of the last acquisition or renewal, in nanoseconds (a Go
	-- time.Duration); the expiry is kept at the microsecond.
	ttl_nsec      bigint      NOT NULL CHECK (ttl_nsec > 0),
	renewals      bigint      NOT NULL DEFAULT 0 CHECK (renewals >= 0),
	released      boolean     NOT NULL DEFAULT false
) WITH (fillfactor = 50);
-- Renewals change no indexed column: with room left in each page, a
-- renewal is a heap-only update, which writes no index entry.

ALTER TABLE __SCHEMA__.attempts ADD COLUMN controller_id bytea;
ALTER TABLE __SCHEMA__.operations ADD COLUMN controller_id bytea;
ALTER TABLE __SCHEMA__.effects ADD COLUMN controller_id bytea;

-- lease_check says whether p_controller holds a live lease, and its
-- expiry (NULL without a lease). A lease read live from the committed row
-- is live; one that reads as not live is read again under a FOR SHARE
-- lock of its row, with the clock read after the lock is held, so that a
-- renewal under way is waited for and no renewal commits, until the
-- caller's transaction ends, that would contradict the answer.
CREATE FUNCTION __SCHEMA__.lease_check(p_controller bytea, OUT r_live boolean, OUT r_expires timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	v_released boolean;
BEGIN
	r_live := false;
	IF p_controller IS NULL THEN RETURN; END IF;
	SELECT expires, released INTO r_expires, v_released FROM __SCHEMA__.leases WHERE controller_id = p_controller;
	IF NOT FOUND THEN RETURN; END IF;
	IF NOT v_released AND clock_timestamp() < r_expires THEN r_live := true; RETURN; END IF;
	SELECT expires, released INTO r_expires, v_released FROM __SCHEMA__.leases
	WHERE controller_id = p_controller FOR SHARE;
	r_live := NOT v_released AND clock_timestamp() < r_expires;
END $$;

-- The lease writes. Each answers the lease's record: r_code is 'ok',
-- 'not_found' (renew and release of an unknown controller), 'expired'
-- (not live) or 'held' (acquire with another ttl).

CREATE FUNCTION __SCHEMA__.acquire_lease(p_controller bytea, p_ttl bigint,
	OUT r_code text, OUT r_acquired timestamptz, OUT r_expires timestamptz, OUT r_ttl bigint,
	OUT r_renewals bigint, OUT r_released boolean, OUT r_live boolean)
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz := clock_timestamp();
BEGIN
	INSERT INTO __SCHEMA__.leases (controller_id, acquired, expires, ttl_nsec)
	VALUES (p_controller, v_now, v_now + (p_ttl / 1000) * interval '1 microsecond', p_ttl)
	ON CONFLICT (controller_id) DO NOTHING
	RETURNING acquired, expires, ttl_nsec, renewals, released INTO r_acquired, r_expires, r_ttl, r_renewals, r_released;
	IF FOUND THEN r_code := 'ok'; r_live := true; RETURN; END IF;
	-- Recorded before (the insert waited for any transaction still
	-- writing it): lock it, then read the clock.
	SELECT acquired, expires, ttl_nsec, renewals, released INTO r_acquired, r_expires, r_ttl, r_renewals, r_released
	FROM __SCHEMA__.leases WHERE controller_id = p_controller FOR SHARE;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: lease conflicted on insert but cannot be read' USING ERRCODE = 'ZL001';
	END IF;
	r_live := NOT r_released AND clock_timestamp() < r_expires;
	r_code := CASE WHEN NOT r_live THEN 'expired' WHEN r_ttl <> p_ttl THEN 'held' ELSE 'ok' END;
END $$;

CREATE FUNCTION __SCHEMA__.renew_lease(p_controller bytea, p_ttl bigint,
	OUT r_code text, OUT r_acquired timestamptz, OUT r_expires timestamptz, OUT r_ttl bigint,
	OUT r_renewals bigint, OUT r_released boolean, OUT r_live boolean)
LANGUAGE plpgsql AS $$
DECLARE
	v_now timestamptz;
BEGIN
	SELECT acquired, expires, ttl_nsec, renewals, released INTO r_acquired, r_expires, r_ttl, r_renewals, r_released
	FROM __SCHEMA__.leases WHERE controller_id = p_controller FOR NO KEY UPDATE;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	-- The clock is read once the row is locked: a transaction that judged
	-- the lease expired under its FOR SHARE lock did so at an earlier time.
	v_now := clock_timestamp();
	IF r_released OR v_now >= r_expires THEN r_code := 'expired'; r_live := false; RETURN; END IF;
	UPDATE __SCHEMA__.leases SET expires = v_now + (p_ttl / 1000) * interval '1 microsecond', ttl_nsec = p_ttl,
		renewals = renewals + 1
	WHERE controller_id = p_controller
	RETURNING expires, ttl_nsec, renewals INTO r_expires, r_ttl, r_renewals;
	r_code := 'ok'; r_live := true;
END $$;

CREATE FUNCTION __SCHEMA__.release_lease(p_controller bytea,
	OUT r_code text, OUT r_acquired timestamptz, OUT r_expires timestamptz, OUT r_ttl bigint,
	OUT r_renewals bigint, OUT r_released boolean, OUT r_live boolean)
LANGUAGE plpgsql AS $$
BEGIN
	SELECT acquired, expires, ttl_nsec, renewals, released INTO r_acquired, r_expires, r_ttl, r_renewals, r_released
	FROM __SCHEMA__.leases WHERE controller_id = p_controller FOR NO KEY UPDATE;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF NOT r_released THEN
		-- A lease released while live ends now.
		UPDATE __SCHEMA__.leases SET released = true, expires = least(expires, clock_timestamp())
		WHERE controller_id = p_controller
		RETURNING expires INTO r_expires;
		r_released := true;
	END IF;
	r_code := 'ok'; r_live := false;
END $$;

-- create_operation and cancel answer the current attempt's controller
-- too; their results change, so they are dropped and created again.
DROP FUNCTION __SCHEMA__.create_operation(bytea, bytea, bytea, bytea, text, text, bigint, bigint, integer);

CREATE FUNCTION __SCHEMA__.create_operation(
	p_org bytea, p_project bytea, p_op bytea, p_cap bytea, p_req text, p_man text,
	p_budget bigint, p_dl_sec bigint, p_dl_nsec integer,
	OUT r_code text, OUT r_state text, OUT r_cancel_reason bytea, OUT r_effects_used bigint,
	OUT r_attempt bytea, OUT r_generation bigint, OUT r_controller bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
BEGIN
	INSERT INTO __SCHEMA__.operations (org_id, project_id, operation_id, capability_id, request_digest,
		manifest_digest, effect_budget, deadline_sec, deadline_nsec)
	VALUES (p_org, p_project, p_op, p_cap, p_req, p_man, p_budget, p_dl_sec, p_dl_nsec)
	ON CONFLICT (org_id, project_id, operation_id) DO NOTHING;
	IF FOUND THEN
		r_code := 'ok'; r_state := 'open'; r_cancel_reason := ''; r_effects_used := 0; r_generation := 0;
		RETURN;
	END IF;
	-- The row that conflicted is committed (ON CONFLICT waited for it).
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: operation conflicted on insert but cannot be read' USING ERRCODE = 'ZL001';
	END IF;
	IF o.capability_id <> p_cap OR o.request_digest <> p_req OR o.manifest_digest <> p_man
		OR o.effect_budget <> p_budget OR o.deadline_sec IS DISTINCT FROM p_dl_sec
		OR o.deadline_nsec IS DISTINCT FROM p_dl_nsec THEN
		r_code := 'changed';
		RETURN;
	END IF;
	r_code := 'ok'; r_state := o.state; r_cancel_reason := o.cancel_reason;
	r_effects_used := o.effects_used; r_attempt := o.attempt_id; r_generation := o.generation;
	r_controller := o.controller_id;
END $$;

DROP FUNCTION __SCHEMA__.cancel(bytea, bytea, bytea, bytea);

CREATE FUNCTION __SCHEMA__.cancel(
	p_org bytea, p_project bytea, p_op bytea, p_reason bytea,
	OUT r_code text, OUT r_cap bytea, OUT r_req text, OUT r_man text, OUT r_budget bigint,
	OUT r_deadline_sec bigint, OUT r_deadline_nsec integer, OUT r_state text, OUT r_cancel_reason bytea,
	OUT r_used bigint, OUT r_attempt bytea, OUT r_generation bigint, OUT r_controller bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.state = 'completed' THEN r_code := 'completed'; RETURN; END IF;
	IF o.state = 'open' THEN
		UPDATE __SCHEMA__.operations SET state = 'cancelled', cancel_reason = p_reason
		WHERE op_pk = o.op_pk AND state = 'open';
		o.state := 'cancelled'; o.cancel_reason := p_reason;
	END IF;
	r_code := 'ok'; r_cap := o.capability_id; r_req := o.request_digest; r_man := o.manifest_digest;
	r_budget := o.effect_budget; r_deadline_sec := o.deadline_sec; r_deadline_nsec := o.deadline_nsec;
	r_state := o.state; r_cancel_reason := o.cancel_reason; r_used := o.effects_used;
	r_attempt := o.attempt_id; r_generation := o.generation; r_controller := o.controller_id;
END $$;

-- start_attempt: an attempt it starts has no controller, and the
-- operation's current controller becomes none. The signature is that of
-- version 1.
CREATE OR REPLACE FUNCTION __SCHEMA__.start_attempt(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea,
	OUT r_code text, OUT r_generation bigint, OUT r_cur_attempt bytea, OUT r_cur_generation bigint,
	OUT r_cancel_reason bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	g bigint;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	SELECT a.generation INTO g FROM __SCHEMA__.attempts a WHERE a.op_pk = o.op_pk AND a.attempt_id = p_attempt;
	IF FOUND THEN
		-- Starting the current attempt again returns its fence; an older
		-- one is fenced off.
		r_generation := g;
		r_code := CASE WHEN g = o.generation THEN 'ok' ELSE 'stale' END;
		RETURN;
	END IF;
	r_generation := o.generation + 1;
	INSERT INTO __SCHEMA__.attempts (op_pk, generation, attempt_id) VALUES (o.op_pk, r_generation, p_attempt);
	UPDATE __SCHEMA__.operations SET attempt_id = p_attempt, generation = r_generation, controller_id = NULL
	WHERE op_pk = o.op_pk AND generation = o.generation;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: fencing generation moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok';
END $$;

-- launch_attempt takes the attempt's controller (NULL for none), whose
-- lease must be live, checked first ('lease_expired', with its expiry in
-- r_lease_expires); an attempt already started must have the same
-- controller ('changed_controller', with the recorded one in
-- r_controller, after the fence check).
DROP FUNCTION __SCHEMA__.launch_attempt(bytea, bytea, bytea, bytea, text, text, bigint, bigint, integer, bytea, bigint, bytea, text);

CREATE FUNCTION __SCHEMA__.launch_attempt(
	p_org bytea, p_project bytea, p_op bytea, p_cap bytea, p_req text, p_man text,
	p_budget bigint, p_dl_sec bigint, p_dl_nsec integer,
	p_attempt bytea, p_gen bigint, p_boot bytea, p_launch text, p_controller bytea,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_boot_attempt bytea, OUT r_boot_generation bigint, OUT r_boot_launch text,
	OUT r_redeemed_pid bigint, OUT r_redeemed_session bytea, OUT r_lease_expires timestamptz, OUT r_controller bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	b __SCHEMA__.bootstraps;
	g bigint;
	started boolean;
	boot_issued boolean;
	v_live boolean;
BEGIN
	IF p_controller IS NOT NULL THEN
		SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(p_controller);
		IF NOT v_live THEN r_code := 'lease_expired'; RETURN; END IF;
	END IF;
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	IF NOT FOUND THEN
		-- A new operation: its first attempt has generation 1, and the
		-- bootstrap id must be nobody's yet.
		IF p_gen <> 1 THEN r_code := 'stale'; r_cur_generation := 0; r_cancel_reason := ''; RETURN; END IF;
		IF EXISTS (SELECT 1 FROM __SCHEMA__.bootstraps WHERE bootstrap_id = p_boot) THEN
			r_code := 'other_operation'; RETURN;
		END IF;
		INSERT INTO __SCHEMA__.operations (org_id, project_id, operation_id, capability_id, request_digest,
			manifest_digest, effect_budget, deadline_sec, deadline_nsec)
		VALUES (p_org, p_project, p_op, p_cap, p_req, p_man, p_budget, p_dl_sec, p_dl_nsec)
		ON CONFLICT (org_id, project_id, operation_id) DO NOTHING
		RETURNING * INTO o;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ledger: operation created concurrently' USING ERRCODE = '40001';
		END IF;
		started := false; boot_issued := false;
	ELSE
		IF o.capability_id <> p_cap OR o.request_digest <> p_req OR o.manifest_digest <> p_man
			OR o.effect_budget <> p_budget OR o.deadline_sec IS DISTINCT FROM p_dl_sec
			OR o.deadline_nsec IS DISTINCT FROM p_dl_nsec THEN
			r_code := 'changed';
			RETURN;
		END IF;
		r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
		IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
		SELECT a.generation, a.controller_id INTO g, r_controller FROM __SCHEMA__.attempts a
		WHERE a.op_pk = o.op_pk AND a.attempt_id = p_attempt;
		started := FOUND;
		IF started AND (g <> p_gen OR g <> o.generation) OR NOT started AND o.generation + 1 <> p_gen THEN
			r_code := 'stale';
			RETURN;
		END IF;
		IF started AND r_controller IS DISTINCT FROM p_controller THEN
			-- The attempt was launched for another controller.
			r_code := 'changed_controller'; RETURN;
		END IF;
		SELECT * INTO b FROM __SCHEMA__.bootstraps WHERE bootstrap_id = p_boot;
		boot_issued := FOUND;
		IF boot_issued THEN
			IF b.op_pk <> o.op_pk THEN r_code := 'other_operation'; RETURN; END IF;
			SELECT a.attempt_id INTO r_boot_attempt FROM __SCHEMA__.attempts a
			WHERE a.op_pk = b.op_pk AND a.generation = b.generation;
			r_boot_generation := b.generation; r_boot_launch := b.launch_digest;
			r_redeemed_pid := b.redeemed_pid; r_redeemed_session := b.redeemed_session;
			IF b.generation <> p_gen THEN r_code := 'changed_attempt'; RETURN; END IF;
			IF b.launch_digest <> p_launch THEN r_code := 'changed_launch'; RETURN; END IF;
		END IF;
	END IF;
	-- Every refusal is decided: write.
	IF NOT started THEN
		INSERT INTO __SCHEMA__.attempts (op_pk, generation, attempt_id, controller_id)
		VALUES (o.op_pk, p_gen, p_attempt, p_controller);
		UPDATE __SCHEMA__.operations SET attempt_id = p_attempt, generation = p_gen, controller_id = p_controller
		WHERE op_pk = o.op_pk AND generation = o.generation;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ledger: fencing generation moved under the operation lock' USING ERRCODE = 'ZL001';
		END IF;
	END IF;
	IF NOT boot_issued THEN
		INSERT INTO __SCHEMA__.bootstraps (bootstrap_id, op_pk, generation, launch_digest)
		VALUES (p_boot, o.op_pk, p_gen, p_launch)
		ON CONFLICT (bootstrap_id) DO NOTHING;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ledger: bootstrap id issued concurrently' USING ERRCODE = '40001';
		END IF;
	END IF;
	r_code := 'ok';
END $$;

-- begin_effect: a new effect of an attempt whose controller's lease is
-- not live is refused ('lease_expired', after the redelivery lookup and
-- before the operation's state); the effect records the attempt's
-- controller, which r_controller answers (the attempt's controller for the
-- refusal), with r_lease_expires its lease's expiry.
DROP FUNCTION __SCHEMA__.begin_effect(bytea, bytea, bytea, bytea, bigint, bytea, text, text);

CREATE FUNCTION __SCHEMA__.begin_effect(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_effect bytea, p_digest text, p_auth text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_deadline_sec bigint, OUT r_deadline_nsec integer, OUT r_budget bigint, OUT r_used bigint,
	OUT r_digest text, OUT r_auth text, OUT r_state text, OUT r_receipt bytea, OUT r_reason text,
	OUT r_attempt bytea, OUT r_generation bigint, OUT r_ordinal bigint,
	OUT r_controller bytea, OUT r_lease_expires timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	e __SCHEMA__.effects;
	v_op bigint;
	v_live boolean;
BEGIN
	-- The common case: the debit, conditional on the fence, the admission,
	-- the controller's lease being live (read from its committed row, see
	-- lease_check), the operation being open, in time and within its
	-- budget, then the effect (version 5).
	UPDATE __SCHEMA__.operations u SET effects_used = u.effects_used + 1
	WHERE u.org_id = p_org AND u.project_id = p_project AND u.operation_id = p_op
		AND u.generation = p_gen AND u.attempt_id = p_attempt AND u.state = 'open'
		AND u.effects_used < u.effect_budget
		AND (u.deadline_sec IS NULL OR extract(epoch FROM clock_timestamp()) * 1000000000
			< u.deadline_sec * 1000000000::numeric + u.deadline_nsec)
		AND EXISTS (SELECT 1 FROM __SCHEMA__.attempts a WHERE a.op_pk = u.op_pk AND a.generation = p_gen AND a.admitted)
		AND (u.controller_id IS NULL OR EXISTS (SELECT 1 FROM __SCHEMA__.leases l
			WHERE l.controller_id = u.controller_id AND NOT l.released AND clock_timestamp() < l.expires))
	RETURNING u.op_pk, u.effects_used, u.controller_id INTO v_op, r_ordinal, r_controller;
	IF FOUND THEN
		INSERT INTO __SCHEMA__.effects (op_pk, effect_id, request_digest, authorization_id, state, attempt_id,
			generation, ordinal, controller_id)
		VALUES (v_op, p_effect, p_digest, p_auth, 'authorized', p_attempt, p_gen, r_ordinal, r_controller)
		ON CONFLICT (op_pk, effect_id) DO NOTHING;
		IF FOUND THEN
			r_code := 'ok'; r_cur_attempt := p_attempt; r_cur_generation := p_gen; r_cancel_reason := '';
			r_digest := p_digest; r_auth := p_auth; r_state := 'authorized';
			r_attempt := p_attempt; r_generation := p_gen; r_used := r_ordinal;
			RETURN;
		END IF;
		-- A redelivery: give the debit back (version 5) and answer below.
		UPDATE __SCHEMA__.operations SET effects_used = effects_used - 1
		WHERE op_pk = v_op AND effects_used = r_ordinal;
		IF NOT FOUND THEN
			RAISE EXCEPTION 'ledger: budget moved under the operation lock' USING ERRCODE = 'ZL001';
		END IF;
	END IF;
	-- Otherwise decide in the ledger's error order, under the operation's
	-- lock.
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	r_deadline_sec := o.deadline_sec; r_deadline_nsec := o.deadline_nsec;
	r_budget := o.effect_budget; r_used := o.effects_used;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.generation <> p_gen OR o.attempt_id <> p_attempt THEN r_code := 'stale'; RETURN; END IF;
	IF NOT (SELECT a.admitted FROM __SCHEMA__.attempts a WHERE a.op_pk = o.op_pk AND a.generation = p_gen) THEN
		r_code := 'out_of_order'; RETURN;
	END IF;
	SELECT * INTO e FROM __SCHEMA__.effects WHERE op_pk = o.op_pk AND effect_id = p_effect;
	IF FOUND THEN
		-- A redelivery, its fingerprint checked like a new effect's.
		r_digest := e.request_digest; r_auth := e.authorization_id; r_state := e.state;
		r_receipt := e.receipt_id; r_reason := e.reason; r_attempt := e.attempt_id;
		r_generation := e.generation; r_ordinal := e.ordinal; r_controller := e.controller_id;
		r_code := CASE WHEN e.request_digest = p_digest THEN 'redelivery' ELSE 'changed' END;
		RETURN;
	END IF;
	r_controller := o.controller_id;
	IF o.controller_id IS NOT NULL THEN
		SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(o.controller_id);
		IF NOT v_live THEN r_code := 'lease_expired'; RETURN; END IF;
	END IF;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	IF o.deadline_sec IS NOT NULL AND extract(epoch FROM clock_timestamp()) * 1000000000
		>= o.deadline_sec * 1000000000::numeric + o.deadline_nsec THEN r_code := 'deadline'; RETURN; END IF;
	IF o.effects_used >= o.effect_budget THEN r_code := 'budget'; RETURN; END IF;
	-- The debit, conditional on the fence and the budget, in the same
	-- transaction as the effect it pays for.
	UPDATE __SCHEMA__.operations SET effects_used = effects_used + 1
	WHERE op_pk = o.op_pk AND generation = p_gen AND effects_used < effect_budget
	RETURNING effects_used INTO r_ordinal;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: budget or fence moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	INSERT INTO __SCHEMA__.effects (op_pk, effect_id, request_digest, authorization_id, state, attempt_id,
		generation, ordinal, controller_id)
	VALUES (o.op_pk, p_effect, p_digest, p_auth, 'authorized', p_attempt, p_gen, r_ordinal, o.controller_id);
	r_code := 'ok'; r_digest := p_digest; r_auth := p_auth; r_state := 'authorized';
	r_attempt := p_attempt; r_generation := p_gen; r_used := r_ordinal;
END $$;

-- settle_effect answers the effect's controller, and Resolve of an
-- authorized effect whose controller's lease is live is refused
-- ('in_flight', with the lease's expiry), decided under lease_check's lock
-- so that no renewal commits between the decision and the write.
DROP FUNCTION __SCHEMA__.settle_effect(bytea, bytea, bytea, bytea, bigint, bytea, text, text, bytea, text);

CREATE FUNCTION __SCHEMA__.settle_effect(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_effect bytea, p_digest text, p_to text, p_receipt bytea, p_reason text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint,
	OUT r_digest text, OUT r_auth text, OUT r_state text, OUT r_receipt bytea, OUT r_reason text,
	OUT r_attempt bytea, OUT r_generation bigint, OUT r_ordinal bigint,
	OUT r_controller bytea, OUT r_lease_expires timestamptz)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	e __SCHEMA__.effects;
	v_live boolean;
BEGIN
	IF p_gen IS NOT NULL THEN
		-- The common case in one statement (version 5).
		UPDATE __SCHEMA__.effects x SET state = p_to, receipt_id = p_receipt, reason = p_reason
		WHERE x.op_pk = (SELECT f.op_pk FROM __SCHEMA__.operations f
				WHERE f.org_id = p_org AND f.project_id = p_project AND f.operation_id = p_op
					AND f.generation = p_gen AND f.attempt_id = p_attempt
				FOR NO KEY UPDATE)
			AND x.effect_id = p_effect AND x.request_digest = p_digest AND x.state = 'authorized'
		RETURNING x.authorization_id, x.attempt_id, x.generation, x.ordinal, x.controller_id
		INTO r_auth, r_attempt, r_generation, r_ordinal, r_controller;
		IF FOUND THEN
			r_code := 'ok'; r_cur_attempt := p_attempt; r_cur_generation := p_gen;
			r_digest := p_digest; r_state := p_to; r_receipt := p_receipt; r_reason := p_reason;
			RETURN;
		END IF;
	END IF;
	-- Otherwise decide in the ledger's error order, under the operation's
	-- lock.
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF p_gen IS NOT NULL AND (o.generation <> p_gen OR o.attempt_id <> p_attempt) THEN r_code := 'stale'; RETURN; END IF;
	SELECT * INTO e FROM __SCHEMA__.effects WHERE op_pk = o.op_pk AND effect_id = p_effect;
	IF NOT FOUND THEN r_code := 'effect_not_found'; RETURN; END IF;
	r_digest := e.request_digest; r_auth := e.authorization_id; r_state := e.state;
	r_receipt := e.receipt_id; r_reason := e.reason; r_attempt := e.attempt_id;
	r_generation := e.generation; r_ordinal := e.ordinal; r_controller := e.controller_id;
	IF e.request_digest <> p_digest THEN r_code := 'changed'; RETURN; END IF;
	IF e.state = p_to AND e.receipt_id IS NOT DISTINCT FROM p_receipt AND e.reason IS NOT DISTINCT FROM p_reason THEN
		r_code := 'ok'; RETURN;
	END IF;
	IF NOT (e.state = 'authorized' OR (p_gen IS NULL AND e.state = 'unknown')) THEN
		r_code := 'transition'; RETURN;
	END IF;
	IF p_gen IS NULL AND e.state = 'authorized' AND e.controller_id IS NOT NULL THEN
		SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(e.controller_id);
		IF v_live THEN r_code := 'in_flight'; RETURN; END IF;
	END IF;
	UPDATE __SCHEMA__.effects SET state = p_to, receipt_id = p_receipt, reason = p_reason
	WHERE op_pk = o.op_pk AND effect_id = p_effect AND state = e.state;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: effect moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok'; r_state := p_to; r_receipt := p_receipt; r_reason := p_reason;
END $$;

-- take_over starts attempt p_attempt of the operation, owned by
-- p_controller, fencing off the current attempt p_from_attempt (generation
-- p_from_gen) once its controller's lease is not live. The order: the
-- operation over; the repeat of a takeover that succeeded (only the
-- taker's lease is checked then); p_from not current ('stale'); p_attempt
-- naming an attempt the operation started ('attempt_exists', with its
-- generation in r_attempt_generation); the owner live ('owner_live'); the
-- taker not live ('lease_expired'). r_lease_controller and r_lease_expires
-- name the lease that refused.
CREATE FUNCTION __SCHEMA__.take_over(
	p_org bytea, p_project bytea, p_op bytea, p_from_attempt bytea, p_from_gen bigint,
	p_attempt bytea, p_controller bytea,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_lease_controller bytea, OUT r_lease_expires timestamptz, OUT r_attempt_generation bigint)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	v_live boolean;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	IF o.generation = p_from_gen + 1 AND o.attempt_id = p_attempt AND o.controller_id = p_controller
		AND EXISTS (SELECT 1 FROM __SCHEMA__.attempts a
			WHERE a.op_pk = o.op_pk AND a.generation = p_from_gen AND a.attempt_id = p_from_attempt) THEN
		-- This takeover, repeated.
		SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(p_controller);
		IF NOT v_live THEN r_code := 'lease_expired'; r_lease_controller := p_controller; RETURN; END IF;
		r_code := 'ok'; r_lease_expires := NULL; RETURN;
	END IF;
	IF o.generation <> p_from_gen OR o.attempt_id <> p_from_attempt THEN r_code := 'stale'; RETURN; END IF;
	SELECT a.generation INTO r_attempt_generation FROM __SCHEMA__.attempts a
	WHERE a.op_pk = o.op_pk AND a.attempt_id = p_attempt;
	IF FOUND THEN
		-- The new attempt's id names an attempt the operation started.
		r_code := 'attempt_exists'; RETURN;
	END IF;
	IF o.controller_id IS NOT NULL THEN
		SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(o.controller_id);
		IF v_live THEN r_code := 'owner_live'; r_lease_controller := o.controller_id; RETURN; END IF;
	END IF;
	SELECT * INTO v_live, r_lease_expires FROM __SCHEMA__.lease_check(p_controller);
	IF NOT v_live THEN r_code := 'lease_expired'; r_lease_controller := p_controller; RETURN; END IF;
	INSERT INTO __SCHEMA__.attempts (op_pk, generation, attempt_id, controller_id)
	VALUES (o.op_pk, p_from_gen + 1, p_attempt, p_controller);
	UPDATE __SCHEMA__.operations SET attempt_id = p_attempt, generation = p_from_gen + 1, controller_id = p_controller
	WHERE op_pk = o.op_pk AND generation = p_from_gen;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: fencing generation moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok'; r_lease_expires := NULL;
END $$;
