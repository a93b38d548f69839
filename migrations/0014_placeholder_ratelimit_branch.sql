-- Purpose: PLACEHOLDER on branch ratelimit only, so that its migrations run without a gap; number 0014 belongs to the audit log branch. Drop this file (its commit) when merging.
SELECT 1;
