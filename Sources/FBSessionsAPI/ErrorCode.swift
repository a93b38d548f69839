/// The closed list of error codes the API sends in `{"error": {"code": ...}}`. `openapi.yaml` lists the same set
/// (a test checks both ways). Never rename a case's raw value: clients match on it.
public enum ErrorCode: String, Sendable, CaseIterable {
    case invalidRequest = "invalid_request"
    case notFound = "not_found"
    case methodNotAllowed = "method_not_allowed"
    case unsupportedMediaType = "unsupported_media_type"
    case payloadTooLarge = "payload_too_large"
    case headersTooLarge = "headers_too_large"
    case unauthorized = "unauthorized"
    case forbidden = "forbidden"
    case internalError = "internal_error"
    case databaseUnavailable = "database_unavailable"
    case timeout = "timeout"
    case shuttingDown = "shutting_down"
    case notReady = "not_ready"
    case sessionNotFound = "session_not_found"
    case sessionClosed = "session_closed"
    case slotsFull = "slots_full"
    case tokenRejected = "token_rejected"
    case tokenAppMismatch = "token_app_mismatch"
    case graphUnavailable = "graph_unavailable"
    case graphError = "graph_error"
}
