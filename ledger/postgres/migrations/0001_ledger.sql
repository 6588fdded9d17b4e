-- Schema version 1 of the ledger. __SCHEMA__ is replaced by the quoted
-- schema name when the migration runs (see migrate.go); every name below is
-- qualified with it, so nothing depends on the session's search_path.
--
-- Identifiers (organization, project, operation, attempt, bootstrap,
-- logical effect, receipt and session ids) are bytea: they are any valid
-- UTF-8, U+0000 included, which text cannot hold, and bytea compares byte
-- by byte, which is the order every backend lists them in.
--
-- Every write of an operation's records first locks the operation's row
-- (FOR NO KEY UPDATE), so the writes of one operation are serial and the
-- writes of different operations run in parallel. The fencing generation is
-- compared inside the same function call, and the writes that advance it
-- or debit the budget are conditional on it (WHERE generation = fence),
-- with the number of rows they touched checked.

CREATE TABLE __SCHEMA__.operations (
	op_pk             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
	org_id            bytea   NOT NULL,
	project_id        bytea   NOT NULL,
	operation_id      bytea   NOT NULL,
	capability_id     bytea   NOT NULL,
	request_digest    text    NOT NULL,
	manifest_digest   text    NOT NULL,
	effect_budget     bigint  NOT NULL,
	-- The deadline at nanosecond precision (timestamptz keeps microseconds);
	-- both NULL for no deadline.
	deadline_sec      bigint,
	deadline_nsec     integer,
	state             text    NOT NULL DEFAULT 'open',
	cancel_reason     bytea   NOT NULL DEFAULT '',
	-- The current attempt: NULL and 0 before the first StartAttempt.
	attempt_id        bytea,
	generation        bigint  NOT NULL DEFAULT 0,
	effects_used      bigint  NOT NULL DEFAULT 0,
	-- The accepted result: all NULL until AcceptResult.
	result_digest     text,
	result_ref        bytea,
	result_generation bigint,
	UNIQUE (org_id, project_id, operation_id),
	CHECK (effect_budget >= 0 AND effects_used >= 0 AND effects_used <= effect_budget),
	CHECK (state IN ('open', 'cancelled', 'completed')),
	CHECK ((state = 'completed') = (result_digest IS NOT NULL)),
	CHECK ((result_digest IS NULL) = (result_ref IS NULL) AND (result_digest IS NULL) = (result_generation IS NULL)),
	CHECK ((deadline_sec IS NULL) = (deadline_nsec IS NULL) AND deadline_nsec BETWEEN 0 AND 999999999),
	CHECK ((generation = 0) = (attempt_id IS NULL) AND generation >= 0),
	CHECK (state = 'cancelled' OR cancel_reason = '')
);

CREATE TABLE __SCHEMA__.attempts (
	op_pk      bigint  NOT NULL REFERENCES __SCHEMA__.operations,
	generation bigint  NOT NULL CHECK (generation >= 1),
	attempt_id bytea   NOT NULL,
	admitted   boolean NOT NULL DEFAULT false,
	PRIMARY KEY (op_pk, generation),
	UNIQUE (op_pk, attempt_id)
);

-- Bootstrap ids are unique in the whole ledger, whatever the scope.
CREATE TABLE __SCHEMA__.bootstraps (
	bootstrap_id     bytea  PRIMARY KEY,
	op_pk            bigint NOT NULL,
	generation       bigint NOT NULL,
	launch_digest    text   NOT NULL,
	redeemed_pid     bigint,
	redeemed_session bytea,
	FOREIGN KEY (op_pk, generation) REFERENCES __SCHEMA__.attempts,
	CHECK ((redeemed_pid IS NULL) = (redeemed_session IS NULL) AND redeemed_pid > 0)
);
CREATE INDEX bootstraps_by_attempt ON __SCHEMA__.bootstraps (op_pk, generation);

-- One row per logical effect of an operation: the primary key is the
-- idempotency key, and ordinal numbers the operation's budget. The attempt
-- that authorized the effect is kept in the row (it never changes), and
-- effects carry no foreign key: a key check would lock the attempt's row on
-- every authorization, and the functions that write effects hold the
-- operation's lock, under which the attempt is known to exist.
CREATE TABLE __SCHEMA__.effects (
	op_pk            bigint NOT NULL,
	effect_id        bytea  NOT NULL,
	request_digest   text   NOT NULL,
	authorization_id text   NOT NULL,
	state            text   NOT NULL,
	receipt_id       bytea,
	reason           text,
	attempt_id       bytea  NOT NULL,
	generation       bigint NOT NULL,
	ordinal          bigint NOT NULL CHECK (ordinal >= 1),
	PRIMARY KEY (op_pk, effect_id),
	CHECK (state IN ('authorized', 'confirmed', 'not_consumed', 'unknown')),
	CHECK ((state = 'confirmed') = (receipt_id IS NOT NULL)),
	CHECK ((state = 'not_consumed') = (reason IS NOT NULL)),
	CHECK (reason IN ('refused', 'cancelled', 'waiting_approval'))
);
-- The reconciliation list: effects whose outcome is not settled.
CREATE INDEX effects_unsettled ON __SCHEMA__.effects (op_pk, effect_id) WHERE state IN ('authorized', 'unknown');

CREATE TABLE __SCHEMA__.artifacts (
	ref    bytea  PRIMARY KEY,
	op_pk  bigint NOT NULL REFERENCES __SCHEMA__.operations,
	digest text   NOT NULL,
	bytes  bytea  NOT NULL
);

-- What the Runtime observed of an attempt, recorded once: the canonical
-- encoding/json form of ledger.AttemptEvidence. json (not jsonb) keeps the
-- text as written, so equal evidence is equal text.
CREATE TABLE __SCHEMA__.evidence (
	op_pk      bigint NOT NULL,
	generation bigint NOT NULL,
	doc        json   NOT NULL,
	PRIMARY KEY (op_pk, generation),
	FOREIGN KEY (op_pk, generation) REFERENCES __SCHEMA__.attempts
);

ALTER TABLE __SCHEMA__.operations
	ADD FOREIGN KEY (result_ref) REFERENCES __SCHEMA__.artifacts,
	ADD FOREIGN KEY (op_pk, result_generation) REFERENCES __SCHEMA__.attempts;

-- The functions below are the ledger's writes, one call and one implicit
-- transaction each. They decide every refusal before their first write and
-- answer it as r_code; the Go side turns codes into the ledger's errors.
-- A broken invariant that only corruption explains raises SQLSTATE ZL001,
-- which rolls the call back.

CREATE FUNCTION __SCHEMA__.create_operation(
	p_org bytea, p_project bytea, p_op bytea, p_cap bytea, p_req text, p_man text,
	p_budget bigint, p_dl_sec bigint, p_dl_nsec integer,
	OUT r_code text, OUT r_state text, OUT r_cancel_reason bytea, OUT r_effects_used bigint,
	OUT r_attempt bytea, OUT r_generation bigint)
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
END $$;

CREATE FUNCTION __SCHEMA__.start_attempt(
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
	UPDATE __SCHEMA__.operations SET attempt_id = p_attempt, generation = r_generation
	WHERE op_pk = o.op_pk AND generation = o.generation;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: fencing generation moved under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok';
END $$;

CREATE FUNCTION __SCHEMA__.issue_bootstrap(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint, p_boot bytea, p_launch text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_boot_attempt bytea, OUT r_boot_generation bigint, OUT r_boot_launch text,
	OUT r_redeemed_pid bigint, OUT r_redeemed_session bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	b __SCHEMA__.bootstraps;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.generation <> p_gen OR o.attempt_id <> p_attempt THEN r_code := 'stale'; RETURN; END IF;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	FOR attempt IN 1..2 LOOP
		SELECT * INTO b FROM __SCHEMA__.bootstraps WHERE bootstrap_id = p_boot;
		IF FOUND THEN
			IF b.op_pk <> o.op_pk THEN r_code := 'other_operation'; RETURN; END IF;
			SELECT a.attempt_id INTO r_boot_attempt FROM __SCHEMA__.attempts a
			WHERE a.op_pk = b.op_pk AND a.generation = b.generation;
			r_boot_generation := b.generation; r_boot_launch := b.launch_digest;
			r_redeemed_pid := b.redeemed_pid; r_redeemed_session := b.redeemed_session;
			r_code := CASE
				WHEN b.generation <> p_gen THEN 'changed_attempt'
				WHEN b.launch_digest <> p_launch THEN 'changed_launch'
				ELSE 'ok' END;
			RETURN;
		END IF;
		INSERT INTO __SCHEMA__.bootstraps (bootstrap_id, op_pk, generation, launch_digest)
		VALUES (p_boot, o.op_pk, p_gen, p_launch)
		ON CONFLICT (bootstrap_id) DO NOTHING;
		IF FOUND THEN
			r_code := 'ok'; r_boot_attempt := p_attempt; r_boot_generation := p_gen; r_boot_launch := p_launch;
			RETURN;
		END IF;
		-- Another operation issued the id meanwhile (this operation's
		-- writers wait for its lock); the next round reads its row.
	END LOOP;
	RAISE EXCEPTION 'ledger: bootstrap id conflicted on insert but cannot be read' USING ERRCODE = 'ZL001';
END $$;

CREATE FUNCTION __SCHEMA__.redeem_bootstrap(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_boot bytea, p_launch text, p_pid bigint, p_session bytea,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_boot_attempt bytea, OUT r_boot_generation bigint, OUT r_boot_launch text,
	OUT r_redeemed_pid bigint, OUT r_redeemed_session bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	b __SCHEMA__.bootstraps;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.generation <> p_gen OR o.attempt_id <> p_attempt THEN r_code := 'stale'; RETURN; END IF;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	SELECT * INTO b FROM __SCHEMA__.bootstraps WHERE bootstrap_id = p_boot AND op_pk = o.op_pk;
	IF NOT FOUND THEN r_code := 'boot_not_found'; RETURN; END IF;
	SELECT a.attempt_id INTO r_boot_attempt FROM __SCHEMA__.attempts a
	WHERE a.op_pk = b.op_pk AND a.generation = b.generation;
	r_boot_generation := b.generation; r_boot_launch := b.launch_digest;
	r_redeemed_pid := b.redeemed_pid; r_redeemed_session := b.redeemed_session;
	IF b.generation <> p_gen THEN r_code := 'stale_boot'; RETURN; END IF;
	IF b.redeemed_pid IS NOT NULL THEN
		-- The same child and session again is a retry of a call whose
		-- outcome was unknown.
		r_code := CASE WHEN b.redeemed_pid = p_pid AND b.redeemed_session = p_session AND b.launch_digest = p_launch
			THEN 'ok' ELSE 'redeemed' END;
		RETURN;
	END IF;
	IF b.launch_digest <> p_launch THEN r_code := 'changed_launch'; RETURN; END IF;
	UPDATE __SCHEMA__.bootstraps SET redeemed_pid = p_pid, redeemed_session = p_session
	WHERE bootstrap_id = p_boot AND redeemed_pid IS NULL;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: bootstrap redeemed under the operation lock' USING ERRCODE = 'ZL001';
	END IF;
	r_redeemed_pid := p_pid; r_redeemed_session := p_session; r_code := 'ok';
END $$;

CREATE FUNCTION __SCHEMA__.admit(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint, p_req text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_request_digest text, OUT r_deadline_sec bigint, OUT r_deadline_nsec integer)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	v_admitted boolean;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	r_request_digest := o.request_digest; r_deadline_sec := o.deadline_sec; r_deadline_nsec := o.deadline_nsec;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.generation <> p_gen OR o.attempt_id <> p_attempt THEN r_code := 'stale'; RETURN; END IF;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	SELECT a.admitted INTO v_admitted FROM __SCHEMA__.attempts a WHERE a.op_pk = o.op_pk AND a.generation = p_gen;
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: current attempt has no attempt row' USING ERRCODE = 'ZL001';
	END IF;
	IF NOT v_admitted AND NOT EXISTS (SELECT 1 FROM __SCHEMA__.bootstraps b
		WHERE b.op_pk = o.op_pk AND b.generation = p_gen AND b.redeemed_pid IS NOT NULL) THEN
		r_code := 'out_of_order'; RETURN;
	END IF;
	IF o.request_digest <> p_req THEN r_code := 'changed'; RETURN; END IF;
	IF o.deadline_sec IS NOT NULL AND extract(epoch FROM clock_timestamp()) * 1000000000
		>= o.deadline_sec * 1000000000::numeric + o.deadline_nsec THEN r_code := 'deadline'; RETURN; END IF;
	IF NOT v_admitted THEN
		UPDATE __SCHEMA__.attempts SET admitted = true WHERE op_pk = o.op_pk AND generation = p_gen;
	END IF;
	r_code := 'ok';
END $$;

CREATE FUNCTION __SCHEMA__.begin_effect(
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
BEGIN
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
CREATE FUNCTION __SCHEMA__.settle_effect(
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

CREATE FUNCTION __SCHEMA__.accept_result(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint,
	p_data text, p_sum text, p_bytes bytea, p_ref bytea,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_data text, OUT r_ref bytea, OUT r_attempt bytea, OUT r_generation bigint)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	v_sum text;
BEGIN
	SELECT * INTO o FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op FOR NO KEY UPDATE;
	r_cur_attempt := o.attempt_id; r_cur_generation := o.generation; r_cancel_reason := o.cancel_reason;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	IF o.generation <> p_gen OR o.attempt_id <> p_attempt THEN r_code := 'stale'; RETURN; END IF;
	IF NOT (SELECT a.admitted FROM __SCHEMA__.attempts a WHERE a.op_pk = o.op_pk AND a.generation = p_gen) THEN
		r_code := 'out_of_order'; RETURN;
	END IF;
	IF o.result_digest IS NOT NULL THEN
		r_data := o.result_digest; r_ref := o.result_ref; r_generation := o.result_generation;
		SELECT a.attempt_id INTO r_attempt FROM __SCHEMA__.attempts a
		WHERE a.op_pk = o.op_pk AND a.generation = o.result_generation;
		IF o.result_digest <> p_data THEN r_code := 'accepted'; RETURN; END IF;
		SELECT digest INTO v_sum FROM __SCHEMA__.artifacts WHERE ref = o.result_ref;
		r_code := CASE WHEN v_sum = p_sum THEN 'ok' ELSE 'changed' END;
		RETURN;
	END IF;
	IF o.state <> 'open' THEN r_code := o.state; RETURN; END IF;
	INSERT INTO __SCHEMA__.artifacts (ref, op_pk, digest, bytes) VALUES (p_ref, o.op_pk, p_sum, p_bytes);
	UPDATE __SCHEMA__.operations
	SET state = 'completed', result_digest = p_data, result_ref = p_ref, result_generation = p_gen
	WHERE op_pk = o.op_pk AND generation = p_gen AND state = 'open';
	IF NOT FOUND THEN
		RAISE EXCEPTION 'ledger: operation moved under its lock' USING ERRCODE = 'ZL001';
	END IF;
	r_code := 'ok'; r_data := p_data; r_ref := p_ref; r_attempt := p_attempt; r_generation := p_gen;
END $$;

CREATE FUNCTION __SCHEMA__.cancel(
	p_org bytea, p_project bytea, p_op bytea, p_reason bytea,
	OUT r_code text, OUT r_cap bytea, OUT r_req text, OUT r_man text, OUT r_budget bigint,
	OUT r_deadline_sec bigint, OUT r_deadline_nsec integer, OUT r_state text, OUT r_cancel_reason bytea,
	OUT r_used bigint, OUT r_attempt bytea, OUT r_generation bigint)
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
	r_attempt := o.attempt_id; r_generation := o.generation;
END $$;

-- record_attempt stores an attempt's evidence once. It is not fenced: any
-- attempt the operation started may record how it ended, whatever the
-- operation's state.
CREATE FUNCTION __SCHEMA__.record_attempt(
	p_org bytea, p_project bytea, p_op bytea, p_attempt bytea, p_gen bigint, p_doc json,
	OUT r_code text, OUT r_doc json)
LANGUAGE plpgsql AS $$
DECLARE
	v_op bigint;
BEGIN
	SELECT op_pk INTO v_op FROM __SCHEMA__.operations
	WHERE org_id = p_org AND project_id = p_project AND operation_id = p_op;
	IF NOT FOUND THEN r_code := 'not_found'; RETURN; END IF;
	PERFORM 1 FROM __SCHEMA__.attempts WHERE op_pk = v_op AND generation = p_gen AND attempt_id = p_attempt;
	IF NOT FOUND THEN r_code := 'no_attempt'; RETURN; END IF;
	INSERT INTO __SCHEMA__.evidence (op_pk, generation, doc) VALUES (v_op, p_gen, p_doc)
	ON CONFLICT (op_pk, generation) DO NOTHING;
	IF FOUND THEN r_code := 'ok'; r_doc := p_doc; RETURN; END IF;
	SELECT doc INTO r_doc FROM __SCHEMA__.evidence WHERE op_pk = v_op AND generation = p_gen;
	r_code := CASE WHEN r_doc::text = p_doc::text THEN 'ok' ELSE 'changed' END;
END $$;
