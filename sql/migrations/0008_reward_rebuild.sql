-- 0008: wallet_reward_rebuild (0004; a bulk load's longest build step) sums
-- each reward event once. The sums are the same as before:
--   * day rows come from one pass over the events, one input row per event
--     (the day keys of 0004 fed every event twice into one aggregate, its day
--     and the lifetime row); the lifetime rows ('infinity') add up the day
--     rows, which are far fewer than the events;
--   * the liquid pass reads only the rows that store `assets`: a row without
--     them counts no liquid part (coalesce(..., '[]') in 0004 and in the
--     triggers), and before this the pass turned every reward row's NULL into
--     an empty list, one call of wallet_assets_json per row; the compact
--     "field amount symbol" lists are split as text, not built into jsonb
--     (the JSON form, a list with other text, goes through jsonb as before);
--   * no JIT: compiling these statements took longer than running them.
-- Measured by the bulk load's build log (t/bench/scale.sh with --bulk).
CREATE OR REPLACE FUNCTION wallet_reward_rebuild() RETURNS void
LANGUAGE plpgsql SET jit = off AS $$
BEGIN
    TRUNCATE wallet_reward_daily, wallet_reward_liquid_daily;
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, (ts AT TIME ZONE 'UTC')::date, op_type, count(*), coalesce(sum(vesting_amount), 0)
      FROM wallet_events
     WHERE wallet_is_reward_type(op_type)
     GROUP BY 1, 2, 3;
    INSERT INTO wallet_reward_daily (account_id, day, op_type, event_count, vesting_sum)
    SELECT account_id, 'infinity', op_type, sum(event_count), sum(vesting_sum)
      FROM wallet_reward_daily
     GROUP BY account_id, op_type;
    INSERT INTO wallet_reward_liquid_daily (account_id, day, op_type, symbol, amount_sum)
    SELECT account_id, day, op_type, symbol, sum(amount)
      FROM (SELECT r.account_id, (r.ts AT TIME ZONE 'UTC')::date AS day, r.op_type, t[i + 2] AS symbol,
                   t[i + 1]::numeric AS amount
              FROM wallet_events r, string_to_array(r.assets, ' ') t, generate_series(1, array_length(t, 1), 3) i
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
