-- The service's role and database on a new Patroni cluster, run once on the primary as the superuser:
--
--     psql -h PRIMARY -U postgres -v password="$(cat fbsessiond-password)" -f deploy/ha/roles.sql
--
-- (through HAProxy's primary address, or on the node that `patronictl list` shows as Leader). tools/ha/run runs
-- exactly this file. Then `fbsessiond migrate` with DATABASE_URL set to the direct (HAProxy) address creates the
-- tables. Everything here is replicated: the standby has it too.
\set ON_ERROR_STOP on

CREATE ROLE fbsessiond LOGIN PASSWORD :'password';
CREATE DATABASE fbsessions OWNER fbsessiond ENCODING 'UTF8' TEMPLATE template0;
-- The per-connection settings the service relies on, on the role as well: every server connection PgBouncer
-- opens for it starts with them, whatever a client ran on that connection before.
ALTER ROLE fbsessiond SET bytea_output = 'hex';
ALTER ROLE fbsessiond SET "TimeZone" = 'UTC';
ALTER ROLE fbsessiond SET "DateStyle" = 'ISO, MDY';
