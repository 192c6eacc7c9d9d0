-- 0012 (1): the reward sums' set-based rebuild (0008, 0009) in two parts, one per
-- table, so that a bulk load's build runs them in two sessions beside the
-- index builds: the rebuild was the build's longest concurrent step (1.3 s of
-- 3.4 at 1 million events: the day sums a hash aggregate over every reward
-- event, the liquid sums a parse of the reward rows' `assets`), and the two
-- parts share no rows. The statements are 0009's, unchanged; the sums too.
CREATE FUNCTION wallet_reward_rebuild_daily() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    TRUNCATE wallet_reward_daily;
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, (ts AT TIME ZONE 'UTC')::date, op_type, count(*), coalesce(sum(vesting_amount), 0)
      FROM wallet_events
     WHERE wallet_is_reward_type(op_type)
     GROUP BY 1, 2, 3;
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, 'infinity', op_type, sum(event_count), sum(vesting_sum)
      FROM wallet_reward_daily
     GROUP BY account_id, op_type;
END $$;

CREATE FUNCTION wallet_reward_rebuild_liquid() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    TRUNCATE wallet_reward_liquid_daily;
    INSERT INTO wallet_reward_liquid_daily (account_id, day, op_type, symbol, amount_sum)
    SELECT account_id, day, op_type, symbol, sum(amount)
      FROM (SELECT r.account_id, (r.ts AT TIME ZONE 'UTC')::date AS day, r.op_type, t[i + 2] AS symbol,
                   t[i + 1]::numeric AS amount
              FROM wallet_events r, string_to_array(wallet_assets_triples(r.assets), ' ') t,
                   generate_series(1, array_length(t, 1), 3) i
             WHERE wallet_is_reward_type(r.op_type) AND r.assets NOT LIKE '[%'
               AND t[i] IN ('hbd_payout', 'sbd_payout', 'hive_payout', 'steem_payout')
            UNION ALL
            SELECT r.account_id, (r.ts AT TIME ZONE 'UTC')::date, r.op_type, l.symbol, l.amount
              FROM wallet_events r, wallet_reward_liquid_parts(r.assets::jsonb) l
             WHERE wallet_is_reward_type(r.op_type) AND r.assets LIKE '[%') parts
     GROUP BY 1, 2, 3, 4;
    INSERT INTO wallet_reward_liquid_daily (account_id, day, op_type, symbol, amount_sum)
    SELECT account_id, 'infinity', op_type, symbol, sum(amount_sum)
      FROM wallet_reward_liquid_daily
     GROUP BY account_id, op_type, symbol;
END $$;

CREATE OR REPLACE FUNCTION wallet_reward_rebuild() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    PERFORM wallet_reward_rebuild_daily();
    PERFORM wallet_reward_rebuild_liquid();
END $$;

-- 0012 (2): a block's operations stay in its row, compressed (STORAGE MAIN),
-- instead of moving to the TOAST table whenever the row is above
-- toast_tuple_target (128 bytes; there for compression to be tried on every
-- row): a block at mainnet density is about 1 KB compressed, so nearly every
-- block row paid a TOAST pointer, a TOAST row and a TOAST index entry, and its
-- writer the TOAST insert. MAIN compresses at the same threshold and moves a
-- value out of line only when the row would not fit a page (a payout block).
-- Measured on the scale bench's store (1,019,251 events, 40,000 blocks):
-- wallet_blocks with its TOAST and indexes 59.9 -> 57.8 MB, 2.1 bytes less per
-- event. The method is pglz (the default): 0009's ALTER COLUMN TYPE reset the
-- lz4 of 0004, and lz4 takes 0.7 bytes per event more than today and 2.8 more
-- than this (it compresses twice as fast). Rows stored before keep their form.
ALTER TABLE wallet_blocks ALTER COLUMN ops SET STORAGE MAIN;
