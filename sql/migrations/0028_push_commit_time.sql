-- 0028: push (issue 29), the commit time in the writers' news. Every
-- payload on channel wallet_events (migrations 0025, 0027) also carries
-- "committed_us": the writer's clock (clock_timestamp(), microseconds since
-- the epoch) when it notifies, its transaction's last statement before the
-- commit. A listener measures the delay from the commit to its send from it
-- (nginx's wallet_history_push_delay_seconds, t/bench/push.sh) instead of
-- from the notification's arrival. A field more: a listener of before
-- ignores it, and one of now takes a payload without it (a writer of before)
-- as committed when it arrives.
CREATE OR REPLACE FUNCTION wallet_events_committed(first_block integer, last_block integer, rewound_above integer)
RETURNS void LANGUAGE sql VOLATILE AS $$
    SELECT pg_notify('wallet_events', json_build_object('first', first_block, 'last', last_block,
                                                        'rewound_above', rewound_above,
                                                        'irreversible', wallet_reorder_limit(),
                                                        'committed_us', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)::text)
$$;

CREATE OR REPLACE FUNCTION wallet_observation_notify() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'INSERT' OR OLD.last_irreversible IS DISTINCT FROM NEW.last_irreversible THEN
        PERFORM pg_notify('wallet_events', json_build_object('irreversible', wallet_reorder_limit(),
                                                             'committed_us', (extract(epoch FROM clock_timestamp()) * 1000000)::bigint)::text);
    END IF;
    RETURN NULL;
END $$;
