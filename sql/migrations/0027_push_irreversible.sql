-- 0027: push (issue 29), irreversible_only and the block a subscriber may
-- trust. The highest block below which every block is stored and
-- irreversible (wallet_reorder_limit, migration 0010) moves when the indexer
-- stores blocks (wallet_events_committed, called in its transaction) and
-- when it records the node's last irreversible block (node_observation):
-- both now tell the listeners of channel wallet_events (migration 0025) in
-- their payload's "irreversible". A listener reads it once when it starts
-- listening (wallet_push_irreversible) and from each notification after.
-- In a writer's transaction the store's indexed block is still the one
-- before the batch (wallet_store_state is refreshed at commit): a store that
-- holds only irreversible blocks tells its batch's at the next observation.

-- SECURITY DEFINER as wallet_store_status: the API's role reads the answer,
-- not backfill_shards.
CREATE FUNCTION wallet_push_irreversible() RETURNS integer
LANGUAGE sql STABLE SECURITY DEFINER SET search_path FROM CURRENT AS $$
    SELECT wallet_reorder_limit()
$$;
GRANT EXECUTE ON FUNCTION wallet_push_irreversible() TO wallet_api_reader;

CREATE OR REPLACE FUNCTION wallet_events_committed(first_block integer, last_block integer, rewound_above integer)
RETURNS void LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify('wallet_events', json_build_object('first', first_block, 'last', last_block,
                                                        'rewound_above', rewound_above,
                                                        'irreversible', wallet_reorder_limit())::text)
$$;

-- The node's last irreversible block moved: the news, at the observation's
-- commit (the indexer records one each step; only a move notifies).
CREATE FUNCTION wallet_observation_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.last_irreversible IS DISTINCT FROM NEW.last_irreversible THEN
        PERFORM pg_notify('wallet_events', json_build_object('irreversible', wallet_reorder_limit())::text);
    END IF;
    RETURN NULL;
END $$;
CREATE TRIGGER wallet_observation_notify AFTER INSERT OR UPDATE ON node_observation
    FOR EACH ROW EXECUTE FUNCTION wallet_observation_notify();
