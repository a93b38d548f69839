-- Purpose: a logged-out session remembers that Facebook confirmed its revocation (DELETE /me/permissions), so that
-- a repeated logout with revoke=true answers "done" again, and a session whose token was erased without a
-- revocation answers "unavailable" (docs/api-contract.md, "Logout and revocation").

ALTER TABLE sessions ADD COLUMN revoked_at timestamptz;
