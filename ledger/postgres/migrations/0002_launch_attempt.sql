-- Schema version 2: launch_attempt, the write of LaunchAttempt. It does
-- what create_operation, start_attempt (at the generation the caller
-- expects) and issue_bootstrap do, in one call and one transaction, so that
-- a launch costs one commit. Like every write it decides each refusal
-- before its first write and answers it as r_code.
--
-- Two writers that race on a missing operation or on a bootstrap id meet
-- at a unique constraint after their checks; the loser raises
-- serialization_failure (SQLSTATE 40001), which rolls its call back, and
-- runs again (Options.MaxRetries), when its checks see the winner's rows.

CREATE FUNCTION __SCHEMA__.launch_attempt(
	p_org bytea, p_project bytea, p_op bytea, p_cap bytea, p_req text, p_man text,
	p_budget bigint, p_dl_sec bigint, p_dl_nsec integer,
	p_attempt bytea, p_gen bigint, p_boot bytea, p_launch text,
	OUT r_code text, OUT r_cur_attempt bytea, OUT r_cur_generation bigint, OUT r_cancel_reason bytea,
	OUT r_boot_attempt bytea, OUT r_boot_generation bigint, OUT r_boot_launch text,
	OUT r_redeemed_pid bigint, OUT r_redeemed_session bytea)
LANGUAGE plpgsql AS $$
DECLARE
	o __SCHEMA__.operations;
	b __SCHEMA__.bootstraps;
	g bigint;
	started boolean;
	boot_issued boolean;
BEGIN
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
		SELECT a.generation INTO g FROM __SCHEMA__.attempts a WHERE a.op_pk = o.op_pk AND a.attempt_id = p_attempt;
		started := FOUND;
		IF started AND (g <> p_gen OR g <> o.generation) OR NOT started AND o.generation + 1 <> p_gen THEN
			r_code := 'stale';
			RETURN;
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
		INSERT INTO __SCHEMA__.attempts (op_pk, generation, attempt_id) VALUES (o.op_pk, p_gen, p_attempt);
		UPDATE __SCHEMA__.operations SET attempt_id = p_attempt, generation = p_gen
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
