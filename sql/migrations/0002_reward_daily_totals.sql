-- 0002: per-account, per-op-type, per-UTC-day sums of reward events, plus a
-- lifetime row per account and op type (day = 'infinity'), so that
-- get_reward_totals of an account with a million rewards reads a handful of
-- rows (lifetime) or at most a range's days, instead of a million events. Statement-level triggers with transition tables
-- keep the sums exactly equal to the events: every insert (indexer, backfill,
-- ON CONFLICT DO NOTHING re-runs insert nothing), update and delete (fork
-- rollback) of wallet_operation_events adjusts them in the same transaction.

CREATE TABLE wallet_reward_daily (
    account      text           NOT NULL,
    op_type      text           NOT NULL,
    day          date           NOT NULL,
    event_count  bigint         NOT NULL,
    vesting_sum  numeric        NOT NULL,
    PRIMARY KEY (account, op_type, day)
);

-- Liquid payouts of the same rewards per symbol (decisions.md section 3).
CREATE TABLE wallet_reward_liquid_daily (
    account      text           NOT NULL,
    op_type      text           NOT NULL,
    day          date           NOT NULL,
    symbol       text           NOT NULL,
    amount_sum   numeric        NOT NULL,
    PRIMARY KEY (account, op_type, day, symbol)
);

-- The liquid payouts of one reward event, from its `assets` list: the HBD
-- (SBD) and HIVE (STEEM) payouts, zero amounts included.
CREATE FUNCTION wallet_reward_liquid_parts(assets jsonb)
RETURNS TABLE (symbol text, amount numeric)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT a->>'symbol', (a->>'amount')::numeric
      FROM jsonb_array_elements(assets) AS a
     WHERE a->>'field' IN ('hbd_payout', 'sbd_payout', 'hive_payout', 'steem_payout')
$$;

-- The aggregate rows an event counts in: its UTC day, and the lifetime row.
CREATE FUNCTION wallet_reward_day_keys(ts timestamptz)
RETURNS TABLE (day date)
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    VALUES ((ts AT TIME ZONE 'UTC')::date), ('infinity'::date)
$$;

-- Adds inserted events to the sums. Rows are grouped and upserted in key
-- order, so concurrent writers (backfill workers) cannot deadlock.
CREATE FUNCTION wallet_reward_daily_on_insert() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    INSERT INTO wallet_reward_daily AS d (account, op_type, day, event_count, vesting_sum)
    SELECT r.account, r.op_type, k.day, count(*), coalesce(sum(r.vesting_amount), 0)
      FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k
     WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
     GROUP BY 1, 2, 3 ORDER BY 1, 2, 3
    ON CONFLICT (account, op_type, day) DO UPDATE
       SET event_count = d.event_count + EXCLUDED.event_count,
           vesting_sum = d.vesting_sum + EXCLUDED.vesting_sum;
    INSERT INTO wallet_reward_liquid_daily AS d (account, op_type, day, symbol, amount_sum)
    SELECT r.account, r.op_type, k.day, l.symbol, sum(l.amount)
      FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k, wallet_reward_liquid_parts(r.assets) l
     WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
     GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4
    ON CONFLICT (account, op_type, day, symbol) DO UPDATE
       SET amount_sum = d.amount_sum + EXCLUDED.amount_sum;
    RETURN NULL;
END $$;

CREATE FUNCTION wallet_reward_daily_on_delete() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    WITH gone AS (
        SELECT r.account, r.op_type, k.day, count(*) AS n, coalesce(sum(r.vesting_amount), 0) AS v
          FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k
         WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
         GROUP BY 1, 2, 3 ORDER BY 1, 2, 3)
    UPDATE wallet_reward_daily d
       SET event_count = d.event_count - g.n, vesting_sum = d.vesting_sum - g.v
      FROM gone g
     WHERE d.account = g.account AND d.op_type = g.op_type AND d.day = g.day;
    WITH gone AS (
        SELECT r.account, r.op_type, k.day, l.symbol, sum(l.amount) AS a
          FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k, wallet_reward_liquid_parts(r.assets) l
         WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
         GROUP BY 1, 2, 3, 4 ORDER BY 1, 2, 3, 4)
    UPDATE wallet_reward_liquid_daily d
       SET amount_sum = d.amount_sum - g.a
      FROM gone g
     WHERE d.account = g.account AND d.op_type = g.op_type AND d.day = g.day AND d.symbol = g.symbol;
    -- A day whose events are all gone leaves no row behind (its liquid rows
    -- go with it: they exist only for days that have events).
    DELETE FROM wallet_reward_liquid_daily l
     USING (SELECT DISTINCT r.account, r.op_type, k.day FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k) g,
           wallet_reward_daily d
     WHERE d.account = g.account AND d.op_type = g.op_type AND d.day = g.day AND d.event_count = 0
       AND l.account = d.account AND l.op_type = d.op_type AND l.day = d.day;
    DELETE FROM wallet_reward_daily d
     USING (SELECT DISTINCT r.account, r.op_type, k.day FROM changed_rows r, wallet_reward_day_keys(r."timestamp") k) g
     WHERE d.account = g.account AND d.op_type = g.op_type AND d.day = g.day AND d.event_count = 0;
    RETURN NULL;
END $$;

CREATE FUNCTION wallet_reward_daily_on_truncate() RETURNS trigger
LANGUAGE plpgsql AS $$
BEGIN
    TRUNCATE wallet_reward_daily, wallet_reward_liquid_daily;
    RETURN NULL;
END $$;

CREATE TRIGGER wallet_reward_daily_insert AFTER INSERT ON wallet_operation_events
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION wallet_reward_daily_on_insert();
CREATE TRIGGER wallet_reward_daily_delete AFTER DELETE ON wallet_operation_events
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION wallet_reward_daily_on_delete();
-- An update is a delete of the old rows and an insert of the new ones.
CREATE TRIGGER wallet_reward_daily_update_old AFTER UPDATE ON wallet_operation_events
    REFERENCING OLD TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION wallet_reward_daily_on_delete();
CREATE TRIGGER wallet_reward_daily_update_new AFTER UPDATE ON wallet_operation_events
    REFERENCING NEW TABLE AS changed_rows FOR EACH STATEMENT EXECUTE FUNCTION wallet_reward_daily_on_insert();
CREATE TRIGGER wallet_reward_daily_truncate AFTER TRUNCATE ON wallet_operation_events
    FOR EACH STATEMENT EXECUTE FUNCTION wallet_reward_daily_on_truncate();

-- Rows stored before this migration.
INSERT INTO wallet_reward_daily (account, op_type, day, event_count, vesting_sum)
SELECT r.account, r.op_type, k.day, count(*), coalesce(sum(r.vesting_amount), 0)
  FROM wallet_operation_events r, wallet_reward_day_keys(r."timestamp") k
 WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
 GROUP BY 1, 2, 3;
INSERT INTO wallet_reward_liquid_daily (account, op_type, day, symbol, amount_sum)
SELECT r.account, r.op_type, k.day, l.symbol, sum(l.amount)
  FROM wallet_operation_events r, wallet_reward_day_keys(r."timestamp") k, wallet_reward_liquid_parts(r.assets) l
 WHERE r.op_type IN ('author_reward', 'curation_reward', 'comment_benefactor_reward')
 GROUP BY 1, 2, 3, 4;

GRANT SELECT ON wallet_reward_daily, wallet_reward_liquid_daily TO wallet_api_reader;
GRANT EXECUTE ON FUNCTION wallet_reward_liquid_parts(jsonb) TO wallet_api_reader;
