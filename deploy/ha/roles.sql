-- The service's role and database on a new Patroni cluster, run once on the primary as the superuser:
--
--     psql -h PRIMARY -U postgres -d postgres -v password="$(cat fbsessiond-password)" -f deploy/ha/roles.sql
--
-- (through HAProxy's primary address, or on the node `patronictl list` shows as Leader). tools/ha/run runs exactly
-- this file. Then `fbsessiond migrate` with DATABASE_URL set to the direct (HAProxy) address creates the tables.
-- Everything here is replicated: the standby has it too.
\set ON_ERROR_STOP on

CREATE ROLE fbsessiond LOGIN PASSWORD :'password';
CREATE DATABASE fbsessions OWNER fbsessiond ENCODING 'UTF8' TEMPLATE template0;
-- Behind PgBouncer in transaction mode the service sets statement_timeout per transaction (SET LOCAL) and bounds
-- every statement with its own client-side deadline (docs/scale-out.md). For a server-side bound on single
-- statements as well, uncomment (it also applies to `fbsessiond migrate`, which connects as this role):
-- ALTER ROLE fbsessiond SET statement_timeout = '10s';
