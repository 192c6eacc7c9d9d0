-- 0012: a bulk load's reward sums without the full-table aggregate at the end.
-- While a bulk load that this release started is loading, a statement trigger
-- (wallet_reward_partials_insert, created by the bulk mode on entering and
-- dropped by its build) adds each COPY's day sums to the partial tables
-- below, in the transaction of the batch's rows: a kill loses a batch's
-- partials with its rows, a re-run writes them again with the rows, never
-- twice. The build then sums the partials (one row per account, day and
-- reward type per batch, far fewer than the events) instead of reading every
-- event (wallet_reward_merge_partials). The day sums are exact sums of exact
-- numerics, so summing them per batch first gives the same values, scale
-- included, as summing the events at once.
--
-- How events become day sums is written once (wallet_reward_day_sums_sql)
-- and run over the events (the rebuild of 0008)
-- or over a statement's new rows (the trigger); the lifetime rows come from
-- the day rows in both (wallet_reward_lifetime_rows).
CREATE TABLE wallet_reward_daily_partial (
    account_id   integer   NOT NULL,
    day          date      NOT NULL,
    op_type      smallint  NOT NULL,
    event_count  bigint    NOT NULL,
    vesting_sum  numeric   NOT NULL
);
CREATE TABLE wallet_reward_liquid_partial (
    account_id   integer   NOT NULL,
    day          date      NOT NULL,
    op_type      smallint  NOT NULL,
    symbol       text      NOT NULL,
    amount_sum   numeric   NOT NULL
);

-- Whether the load's trigger wrote partials from its first row on (a load
-- an earlier release started did not: its build rebuilds the sums).
ALTER TABLE wallet_bulk_load ADD COLUMN reward_partials boolean NOT NULL DEFAULT false;

-- One statement: INSERT INTO `daily` and `liquid` the day rows of the events
-- in `events` (0008's sums: the compact lists split as text, the JSON form
-- through jsonb). The reward rows are read once: a transition table holds
-- every new row, most of which are no reward.
CREATE FUNCTION wallet_reward_day_sums_sql(events text, daily text, liquid text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
SELECT format('WITH r AS MATERIALIZED ('
              '  SELECT account_id, (ts AT TIME ZONE ''UTC'')::date AS day, op_type, vesting_amount, assets'
              '    FROM %1$I WHERE wallet_is_reward_type(op_type)),'
              ' daily AS (INSERT INTO %2$I (account_id, day, op_type, event_count, vesting_sum)'
              '  SELECT account_id, day, op_type, count(*), coalesce(sum(vesting_amount), 0) FROM r GROUP BY 1, 2, 3)'
              ' INSERT INTO %3$I (account_id, day, op_type, symbol, amount_sum)'
              ' SELECT account_id, day, op_type, symbol, sum(amount)'
              '   FROM (SELECT r.account_id, r.day, r.op_type, t[i + 2] AS symbol, t[i + 1]::numeric AS amount'
              '           FROM r, string_to_array(wallet_assets_triples(r.assets), '' '') t,'
              '                generate_series(1, array_length(t, 1), 3) i'
              '          WHERE r.assets NOT LIKE ''[%%'''
              '            AND t[i] IN (''hbd_payout'', ''sbd_payout'', ''hive_payout'', ''steem_payout'')'
              '         UNION ALL'
              '         SELECT r.account_id, r.day, r.op_type, l.symbol, l.amount'
              '           FROM r, wallet_reward_liquid_parts(r.assets::jsonb) l'
              '          WHERE r.assets LIKE ''[%%'') parts'
              '  GROUP BY 1, 2, 3, 4', events, daily, liquid)
$$;

-- The lifetime ('infinity') rows from the day rows, which are far fewer than the events.
CREATE FUNCTION wallet_reward_lifetime_rows() RETURNS void
LANGUAGE sql AS $$
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, 'infinity', op_type, sum(event_count), sum(vesting_sum)
      FROM wallet_reward_daily
     GROUP BY account_id, op_type;
    INSERT INTO wallet_reward_liquid_daily (account_id, day, op_type, symbol, amount_sum)
    SELECT account_id, 'infinity', op_type, symbol, sum(amount_sum)
      FROM wallet_reward_liquid_daily
     GROUP BY account_id, op_type, symbol;
$$;

CREATE OR REPLACE FUNCTION wallet_reward_rebuild() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    TRUNCATE wallet_reward_daily, wallet_reward_liquid_daily;
    EXECUTE wallet_reward_day_sums_sql('wallet_events', 'wallet_reward_daily', 'wallet_reward_liquid_daily');
    PERFORM wallet_reward_lifetime_rows();
END $$;

-- The trigger's function: the new rows' day sums, appended (no key, no
-- upsert: writers never wait for each other here). EXECUTE sees the
-- statement's transition table as the function's own queries do.
CREATE FUNCTION wallet_reward_partials_on_insert() RETURNS trigger
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    EXECUTE wallet_reward_day_sums_sql('changed_rows', 'wallet_reward_daily_partial', 'wallet_reward_liquid_partial');
    RETURN NULL;
END $$;

-- The build's step: the sums from the partials, which are then emptied.
CREATE FUNCTION wallet_reward_merge_partials() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    TRUNCATE wallet_reward_daily, wallet_reward_liquid_daily;
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, day, op_type, sum(event_count), sum(vesting_sum)
      FROM wallet_reward_daily_partial
     GROUP BY 1, 2, 3;
    INSERT INTO wallet_reward_liquid_daily (account_id, day, op_type, symbol, amount_sum)
    SELECT account_id, day, op_type, symbol, sum(amount_sum)
      FROM wallet_reward_liquid_partial
     GROUP BY 1, 2, 3, 4;
    PERFORM wallet_reward_lifetime_rows();
    TRUNCATE wallet_reward_daily_partial, wallet_reward_liquid_partial;
END $$;
