-- Purpose: placeholder only, so that this branch's 0014 follows a 0013 (the migrator refuses gaps). Migration 0013
-- belongs to the session-events work on another branch; drop this file when merging (it holds no statement).
SELECT 1;
