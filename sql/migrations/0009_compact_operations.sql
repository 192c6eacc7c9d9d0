-- 0009: raw operations without the envelope the event rows already hold, and
-- `assets` lists as amounts alone under a template (docs/store-layout.md,
-- "Migration 0009").
--
-- ---- envelopes ----
-- wallet_blocks.ops keeps every operation with events once, as [trx_in_block,
-- the entry as the node sent it]. The entry's envelope repeats what each of
-- the operation's event rows holds: block, trx_in_block, op_in_trx,
-- virtual_op, timestamp, trx_id (and account_history_api's operation_id 0),
-- and the operation's type name.
-- An operation is now stored as [trx_in_block, the entry without those
-- members, mask], the mask naming the members left out; only a member whose
-- value the row gives back exactly is left out (the writer checks each,
-- common/src/event_store.cpp stored_operation). Bits:
--     1 "block": block_num            16 "timestamp": ts as YYYY-MM-DDTHH:MM:SS (UTC)
--     2 "trx_in_block": element 0     32 "trx_id": trx_id (40 lowercase hex digits)
--     4 "op_in_trx": op_in_trx        64 "trx_id": 40 zeros (virtual; trx_id is NULL)
--     8 "virtual_op": virtual_op > 0  128 "operation_id": 0
--   256 "op": ["name", body] stored as [body], the name wallet_op_type_name(op_type)
--   512 "op": {"type": "name_operation", "value": body} stored without "type"
-- Without a mask (two elements) the entry is whole, as before: rows written
-- through the view, and entries with a repeated or escaped envelope name.
-- Rule 8: `payload` of wallet_operation_events is the entry with the members
-- put back, jsonb-equal to what the node sent (jsonb has no member order).
-- The operations stored so far are rewritten here, in one pass over the
-- events (their envelope values, where all rows of an operation agree) and
-- one rewrite of wallet_blocks; an upgraded entry keeps the rest of the node's
-- entry as jsonb text (the same JSON value).

CREATE FUNCTION wallet_operation_payload(entry json, block_num integer, ts timestamptz, op_in_trx integer,
                                         virtual_op integer, trx_id bytea, op_type smallint) RETURNS jsonb
LANGUAGE sql STABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN mask IS NULL THEN (entry -> 1)::jsonb
                ELSE CASE WHEN mask & 256 <> 0
                          THEN jsonb_set((entry -> 1)::jsonb, '{op}',
                                         jsonb_build_array(wallet_op_type_name(op_type)) || ((entry -> 1) -> 'op')::jsonb)
                          WHEN mask & 512 <> 0
                          THEN jsonb_set((entry -> 1)::jsonb, '{op}',
                                         ((entry -> 1) -> 'op')::jsonb
                                         || jsonb_build_object('type', wallet_op_type_name(op_type) || '_operation'))
                          ELSE (entry -> 1)::jsonb END
                     || jsonb_strip_nulls(jsonb_build_object(
                    'block', CASE WHEN mask & 1 <> 0 THEN block_num END,
                    'trx_in_block', CASE WHEN mask & 2 <> 0 THEN (entry -> 0)::jsonb END,
                    'op_in_trx', CASE WHEN mask & 4 <> 0 THEN op_in_trx END,
                    'virtual_op', CASE WHEN mask & 8 <> 0 THEN virtual_op > 0 END,
                    'timestamp', CASE WHEN mask & 16 <> 0 THEN to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS') END,
                    'trx_id', CASE WHEN mask & 32 <> 0 THEN wallet_trx_id_text(trx_id)
                                   WHEN mask & 64 <> 0 THEN repeat('0', 40) END,
                    'operation_id', CASE WHEN mask & 128 <> 0 THEN 0 END)) END
      FROM (SELECT (entry ->> 2)::integer AS mask) m
$$;

-- ---- asset templates ----
-- `assets` (migration 0004) holds the triples "field amount symbol ..." of
-- lists the amount columns do not; an author reward's four took 117 bytes.
-- A list whose fields and symbols are those of a template is stored as the
-- template's code and its amounts ("#0.013 0.000 31.935041 7.096675"): the
-- codes are characters no field name starts with, one per template, in the
-- order of wallet_assets_templates(); the writer's list
-- (common/src/event_store.cpp, store::asset_templates) is the same (a
-- foundation test keeps the two equal). Any other list is stored as before.
-- wallet_assets_triples() gives the triples back; every reader of `assets`
-- reads through it (wallet_assets_json, the reward sums, the API).
CREATE FUNCTION wallet_assets_templates() RETURNS text[]
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT ARRAY[
        'hbd_payout %s HBD hive_payout %s HIVE vesting_payout %s VESTS curators_vesting_payout %s VESTS',
        'reward_hive %s HIVE reward_hbd %s HBD reward_vests %s VESTS',
        'hive_vested %s HIVE vesting_shares_received %s VESTS',
        'hbd_payout %s HBD hive_payout %s HIVE vesting_payout %s VESTS',
        'withdrawn %s VESTS deposited %s HIVE',
        'amount_to_sell %s HBD min_to_receive %s HIVE',
        'amount_to_sell %s HIVE min_to_receive %s HBD',
        'current_pays %s HBD open_pays %s HIVE',
        'current_pays %s HIVE open_pays %s HBD',
        'initial_vesting_shares %s VESTS initial_delegation %s VESTS',
        'withdrawn %s VESTS deposited %s VESTS',
        'amount_in %s HBD amount_out %s HIVE',
        'amount_in %s HIVE amount_out %s HBD excess_collateral %s HIVE',
        'fee %s HIVE delegation %s VESTS']
$$;
CREATE FUNCTION wallet_assets_template_codes() RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$ SELECT '#$%&*+:;<=>?^~!|' $$;

-- `assets` as the triples (or JSON, or NULL) of 0004, whichever form is stored.
CREATE FUNCTION wallet_assets_triples(assets text) RETURNS text
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN assets <> '' AND strpos(wallet_assets_template_codes(), left(assets, 1)) > 0
                THEN format((wallet_assets_templates())[strpos(wallet_assets_template_codes(), left(assets, 1))],
                            VARIADIC string_to_array(substr(assets, 2), ' '))
                ELSE assets END
$$;

-- As 0004's, reading either stored form.
CREATE OR REPLACE FUNCTION wallet_assets_json(assets text) RETURNS jsonb
LANGUAGE sql IMMUTABLE PARALLEL SAFE AS $$
    SELECT CASE WHEN triples IS NULL THEN NULL
                WHEN triples LIKE '[%' THEN triples::jsonb
                ELSE (SELECT coalesce(jsonb_agg(jsonb_build_object('field', t[i], 'amount', t[i + 1], 'symbol', t[i + 2])
                                                ORDER BY i), '[]'::jsonb)
                        FROM string_to_array(nullif(triples, ''), ' ') AS t,
                             generate_series(1, coalesce(array_length(t, 1), 0), 3) AS i) END
      FROM wallet_assets_triples(assets) AS triples
$$;

-- As 0008's; the compact lists are read as triples.
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

-- A stored list in the template form where one fits (the writer's choice).
CREATE FUNCTION pg_temp.assets_templated(assets text) RETURNS text
LANGUAGE sql IMMUTABLE AS $$
    SELECT CASE WHEN pos IS NULL THEN assets ELSE substr(wallet_assets_template_codes(), pos, 1) || amounts END
      FROM (SELECT string_to_array(assets, ' ') AS t) s
     CROSS JOIN LATERAL (
        SELECT CASE WHEN assets = '' OR assets LIKE '[%' OR strpos(wallet_assets_template_codes(), left(assets, 1)) > 0
                      OR array_length(t, 1) % 3 <> 0 THEN NULL
                    ELSE array_length(t, 1) END AS n) l
     CROSS JOIN LATERAL (
        SELECT string_agg(t[i] || ' %s ' || t[i + 2], ' ' ORDER BY i) AS shape, string_agg(t[i + 1], ' ' ORDER BY i) AS amounts
          FROM generate_series(1, l.n, 3) AS i) a
     CROSS JOIN LATERAL (SELECT array_position(wallet_assets_templates(), a.shape) AS pos) p
$$;

-- ---- the operations stored so far ------------------------------------------------
-- The envelope values of each operation, where all its rows agree (rows
-- written by hand through the view need not).
CREATE TEMP TABLE operation_facts ON COMMIT DROP AS
SELECT block_num, block_seq, min(ts) AS ts, min(op_in_trx) AS op_in_trx, min(virtual_op) AS virtual_op,
       (array_agg(trx_id))[1] AS trx_id, min(op_type) AS op_type
  FROM wallet_events
 GROUP BY block_num, block_seq
HAVING min(ts) = max(ts) AND min(op_in_trx) = max(op_in_trx) AND min(virtual_op) = max(virtual_op)
   AND min(op_type) = max(op_type)
   AND count(DISTINCT trx_id) <= 1 AND count(trx_id) IN (0, count(*));
ALTER TABLE operation_facts ADD PRIMARY KEY (block_num, block_seq);
ANALYZE operation_facts;

-- One stored operation without the members its rows give back (as the writer does).
CREATE FUNCTION pg_temp.operation_stripped(entry json, block_num integer, ts timestamptz, op_in_trx integer,
                                           virtual_op integer, trx_id bytea, op_type smallint) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT CASE WHEN mask = 0 THEN entry
                ELSE json_build_array(entry -> 0,
                                      (CASE WHEN mask & 256 <> 0 THEN jsonb_set(op, '{op}', (op -> 'op') - 0)
                                            WHEN mask & 512 <> 0 THEN jsonb_set(op, '{op}', (op -> 'op') - 'type')
                                            ELSE op END
                                       - array_remove(ARRAY[
                                          CASE WHEN mask & 1 <> 0 THEN 'block' END,
                                          CASE WHEN mask & 2 <> 0 THEN 'trx_in_block' END,
                                          CASE WHEN mask & 4 <> 0 THEN 'op_in_trx' END,
                                          CASE WHEN mask & 8 <> 0 THEN 'virtual_op' END,
                                          CASE WHEN mask & 16 <> 0 THEN 'timestamp' END,
                                          CASE WHEN mask & 96 <> 0 THEN 'trx_id' END,
                                          CASE WHEN mask & 128 <> 0 THEN 'operation_id' END], NULL))::json,
                                      mask) END
      FROM (SELECT (entry -> 1)::jsonb AS op) o
      CROSS JOIN LATERAL (
        SELECT CASE WHEN block_num IS NULL OR json_array_length(entry) <> 2 OR jsonb_typeof(op) <> 'object' THEN 0
                    ELSE CASE WHEN op -> 'block' = to_jsonb(block_num) THEN 1 ELSE 0 END
                       + CASE WHEN op -> 'trx_in_block' = (entry -> 0)::jsonb THEN 2 ELSE 0 END
                       + CASE WHEN op -> 'op_in_trx' = to_jsonb(op_in_trx) THEN 4 ELSE 0 END
                       + CASE WHEN op -> 'virtual_op' = to_jsonb(virtual_op > 0) THEN 8 ELSE 0 END
                       + CASE WHEN op -> 'timestamp' = to_jsonb(to_char(ts AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS'))
                              THEN 16 ELSE 0 END
                       + CASE WHEN octet_length(trx_id) = 20 AND op -> 'trx_id' = to_jsonb(wallet_trx_id_text(trx_id))
                              THEN 32
                              WHEN trx_id IS NULL AND op -> 'trx_id' = to_jsonb(repeat('0', 40)) THEN 64 ELSE 0 END
                       + CASE WHEN op -> 'operation_id' = '0'::jsonb THEN 128 ELSE 0 END
                       + CASE WHEN jsonb_typeof(op -> 'op') = 'array' AND op -> 'op' -> 0 = to_jsonb(wallet_op_type_name(op_type))
                              THEN 256
                              WHEN jsonb_typeof(op -> 'op') = 'object'
                               AND op -> 'op' -> 'type' = to_jsonb(wallet_op_type_name(op_type) || '_operation')
                              THEN 512 ELSE 0 END END AS mask) m
$$;

CREATE FUNCTION pg_temp.operations_stripped(block integer, ops json) RETURNS json
LANGUAGE sql STABLE AS $$
    SELECT coalesce(json_object_agg(o.block_seq, pg_temp.operation_stripped(o.entry, f.block_num, f.ts, f.op_in_trx,
                                                                          f.virtual_op, f.trx_id, f.op_type)
                                    ORDER BY o.block_seq), '{}'::json)
      FROM wallet_block_entries(ops) o
      LEFT JOIN operation_facts f ON f.block_num = block AND f.block_seq = o.block_seq
$$;

-- The view reads ops: it goes while the column is rewritten (one pass, no
-- dead versions left behind).
DROP VIEW wallet_operation_events;
ALTER TABLE wallet_blocks ALTER COLUMN ops TYPE json USING pg_temp.operations_stripped(block_num, ops);
DROP FUNCTION pg_temp.operations_stripped(integer, json);
DROP FUNCTION pg_temp.operation_stripped(json, integer, timestamptz, integer, integer, bytea, smallint);
-- The events once, their indexes built again (as 0007).
ALTER TABLE wallet_events ALTER COLUMN assets TYPE text USING pg_temp.assets_templated(assets);
DROP FUNCTION pg_temp.assets_templated(text);

-- ---- the table of 0001, as a view (as 0007's, payload rebuilt) -------------------
CREATE VIEW wallet_operation_events AS
SELECT e.block_num,
       (o.entry ->> 0)::bigint AS trx_in_block,
       e.op_in_trx, e.virtual_op, a.name AS account, wallet_role_name(e.role) AS role,
       e.block_seq, wallet_op_type_name(e.op_type) AS op_type, wallet_trx_id_text(e.trx_id) AS trx_id,
       e.ts AS "timestamp", e.amount, e.symbol, e.vesting_amount, e.vesting_symbol, e.counterparty, e.memo,
       e.author, e.permlink,
       coalesce(wallet_assets_json(e.assets), wallet_derived_assets(e.op_type, e.amount, e.symbol, e.vesting_amount, e.vesting_symbol)) AS assets,
       wallet_operation_payload(o.entry, e.block_num, e.ts, e.op_in_trx, e.virtual_op, e.trx_id, e.op_type) AS payload
  FROM wallet_events e
  JOIN wallet_accounts a ON a.id = e.account_id
  LEFT JOIN (SELECT b.block_num, o.block_seq, o.entry
               FROM wallet_blocks b CROSS JOIN LATERAL wallet_block_entries(b.ops) AS o) o
         ON o.block_num = e.block_num AND o.block_seq = e.block_seq;
CREATE TRIGGER wallet_operation_events_write INSTEAD OF INSERT OR UPDATE OR DELETE ON wallet_operation_events
    FOR EACH ROW EXECUTE FUNCTION wallet_operation_events_write();

GRANT SELECT ON wallet_operation_events TO wallet_api_reader;
