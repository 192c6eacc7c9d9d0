-- 0025: push (issue 29). The writers announce what they committed on one
-- channel, wallet_events, and nginx's workers with WebSocket subscribers
-- listen to it (docs/wallet-history-api.md, "Push"). The channel is named
-- here only.
--
-- wallet_events_committed: called inside a writer's transaction (the
-- indexer's batch, a backfill shard's batch), so PostgreSQL delivers the
-- notification at commit and only if the transaction commits. The payload
-- is what a listener may want to know of the batch, never its rows:
-- {"first": the first block stored, "last": the last, "rewound_above": the
-- block a fork rewound to (the indexer; else null)}. A listener fetches the
-- new rows itself (a keyset above what it delivered), so the payload only
-- says "look again"; identical payloads of one transaction are folded into
-- one by PostgreSQL.
CREATE FUNCTION wallet_events_committed(first_block integer, last_block integer, rewound_above integer)
RETURNS void LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify('wallet_events', json_build_object('first', first_block, 'last', last_block,
                                                        'rewound_above', rewound_above)::text)
$$;
-- The writers (wallet_writer owns the schema) only: a NOTIFY of anyone
-- else's costs the listeners a fetch for nothing.
REVOKE ALL ON FUNCTION wallet_events_committed(integer, integer, integer) FROM PUBLIC;

-- wallet_listen_events: LISTEN on that channel, as a function so that a
-- client that runs only prepared statements (the API's pool) can start
-- listening. LISTEN is allowed in a read-only transaction; not on a standby,
-- which receives no notifications (the listener connects to the primary).
-- Any role may call it (the API's reader does).
CREATE FUNCTION wallet_listen_events() RETURNS void LANGUAGE plpgsql VOLATILE AS $$
BEGIN
    LISTEN wallet_events;
END $$;
