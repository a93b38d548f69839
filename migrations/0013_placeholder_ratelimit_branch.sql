-- Purpose: PLACEHOLDER on branch ratelimit only, so that its migrations run without a gap; number 0013 belongs to the session events branch. Drop this file (its commit) when merging.
SELECT 1;
