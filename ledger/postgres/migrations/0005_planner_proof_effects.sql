-- Schema version 5: BeginEffect and the fenced outcome calls no longer
-- depend on the planner's estimate of the effects table. Version 3's
-- begin_effect checked that the effect was new in the statement that
-- debits (an anti-join), and settle_effect found the effect through a join
-- with the locked operation: on a table created moments ago, whose
-- statistics say it is empty, both were planned as scans of every effect
-- (or every unsettled one), a cost that grew with the ledger until the
-- table was next analyzed. Now begin_effect debits, then inserts the
-- effect, and gives the debit back when the insert finds the effect
-- already recorded (a redelivery, answered as before); settle_effect finds
-- the operation first and the effect by its primary key. The operations
-- table leaves room in its pages, so that a debit (which changes no
-- indexed column) is a heap-only update. The signatures are unchanged.

ALTER TABLE __SCHEMA__.operations SET (fillfactor = 70);

CREATE OR REPLACE FUNCTION __SCHEMA__.begin_effect(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_effect bytea, p_digest text, p_auth text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_deadline_sec bigint, OUT r_deadline_nsec integer, OUT r_budget bigint, OUT r_used bigint,
	OUT r_digest text, OUT r_auth text, OUT r_state text, OUT r_receipt bytea, OUT r_reason text,
	OUT r_attempt bytea, OUT r_generation bigint, OUT r_ordinal bigint)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	e __SCHEMA__.effects;
	v_op bigint;
BEGIN
	-- The common case: the debit, conditional on the fence, the admission,
	-- the operation being open, in time and within its budget, then the
	-- effect. The effect's newness is decided by its insert, not by a
	-- lookup in the same statement as the debit: planned with a freshly
	-- created table's statistics, that lookup joined into a scan of every
	-- effect.
	UPDATE __SCHEMA__.operations u SET effects_used = u.effects_used + 1
	WHERE u.org_id = p_org AND u.project_id = p_project AND u.operation_id = p_op
		AND u.generation = p_gen AND u.attempt_id = p_attempt AND u.state = 'open'
		AND u.effects_used < u.effect_budget
		AND (u.deadline_sec IS NULL OR extract(epoch FROM clock_timestamp()) * 1000000000
			< u.deadline_sec * 1000000000::numeric + u.deadline_nsec)
		AND EXISTS (SELECT 1 FROM __SCHEMA__.attempts a WHERE a.op_pk = u.op_pk AND a.generation = p_gen AND a.admitted)
	RETURNING u.op_pk, u.effects_used INTO v_op, r_ordinal;
	IF FOUND THEN
		INSERT INTO __SCHEMA__.effects (op_pk, effect_id, request_digest, authorization_id, state, attempt_id, generation, ordinal)
		VALUES (v_op, p_effect, p_digest, p_auth, 'authorized', p_attempt, p_gen, r_ordinal)
		ON CONFLICT (op_pk, effect_id) DO NOTHING;
		IF FOUND THEN
			r_code := 'ok'; r_cur_attempt := p_attempt; r_cur_generation := p_gen; r_cancel_reason := '';
			r_digest := p_digest; r_auth := p_auth; r_state := 'authorized';
			r_attempt := p_attempt; r_generation := p_gen; r_used := r_ordinal;
			RETURN;
		END IF;
		-- The effect was recorded before (the insert waited for any
		-- transaction still writing it): a redelivery, which costs
		-- nothing. Give the debit back, under the row lock the debit took,
		-- and answer below as without the fast path.
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
		r_generation := e.generation; r_ordinal := e.ordinal;
		r_code := CASE WHEN e.request_digest = p_digest THEN 'redelivery' ELSE 'changed' END;
		RETURN;
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
	INSERT INTO __SCHEMA__.effects (op_pk, effect_id, request_digest, authorization_id, state, attempt_id, generation, ordinal)
	VALUES (o.op_pk, p_effect, p_digest, p_auth, 'authorized', p_attempt, p_gen, r_ordinal);
	r_code := 'ok'; r_digest := p_digest; r_auth := p_auth; r_state := 'authorized';
	r_attempt := p_attempt; r_generation := p_gen; r_used := r_ordinal;
END $$;

-- settle_effect records an effect's outcome: p_to with p_receipt or
-- p_reason. A fenced call (ConfirmEffect, MarkNotConsumed, MarkUnknown)
-- passes its fence and moves only an authorized effect; Resolve passes a
-- NULL fence and may also move an unknown one. The identical outcome again
-- is answered with the record.
CREATE OR REPLACE FUNCTION __SCHEMA__.settle_effect(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_effect bytea, p_digest text, p_to text, p_receipt bytea, p_reason text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint,
	OUT r_digest text, OUT r_auth text, OUT r_state text, OUT r_receipt bytea, OUT r_reason text,
	OUT r_attempt bytea, OUT r_generation bigint, OUT r_ordinal bigint)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	e __SCHEMA__.effects;
BEGIN
	IF p_gen IS NOT NULL THEN
		-- The common case in one statement: the fence holds (the
		-- operation's row is locked for it) and the effect is authorized
		-- with the digest given. The operation is found first, as a value,
		-- so that the effect is found by its whole primary key.
		UPDATE __SCHEMA__.effects x SET state = p_to, receipt_id = p_receipt, reason = p_reason
		WHERE x.op_pk = (SELECT f.op_pk FROM __SCHEMA__.operations f
				WHERE f.org_id = p_org AND f.project_id = p_project AND f.operation_id = p_op
					AND f.generation = p_gen AND f.attempt_id = p_attempt
				FOR NO KEY UPDATE)
			AND x.effect_id = p_effect AND x.request_digest = p_digest AND x.state = 'authorized'
		RETURNING x.authorization_id, x.attempt_id, x.generation, x.ordinal
		INTO r_auth, r_attempt, r_generation, r_ordinal;
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
	r_generation := e.generation; r_ordinal := e.ordinal;
	IF e.request_digest <> p_digest THEN r_code := 'changed'; RETURN; END IF;
	IF e.state = p_to AND e.receipt_id IS NOT DISTINCT FROM p_receipt AND e.reason IS NOT DISTINCT FROM p_reason THEN
		r_code := 'ok'; RETURN;
	END IF;
	IF NOT (e.state = 'authorized' OR (p_gen IS NULL AND e.state = 'unknown')) THEN
		r_code := 'transition'; RETURN;
	END IF;
	UPDATE __SCHEMA__.effects SET state = p_to, receipt_id = p_receipt, reason = p_reason
	WHERE op_pk = o.op_pk AND effect_id = p_effect AND state = e.state;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: effect moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok'; r_state := p_to; r_receipt := p_receipt; r_reason := p_reason;
END $$;
