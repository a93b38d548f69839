internal import CLibPQ

/// libpq's notice receiver for every `PostgresConnection` (`PQsetNoticeReceiver`).
///
/// Called by libpq on whichever thread is inside a libpq call on that connection (the connection's single
/// user thread), for NOTICE/WARNING messages and for an ERROR or FATAL the server sends while the
/// connection is idle, typically "terminating connection due to administrator command" just before it
/// closes the socket. Unwraps `context` as an unretained `PostgresConnection` (it owns the `PGconn`, so
/// it outlives the registration), hands it the message's severity, and returns nothing.
func postgresNoticeReceiverThunk(_ context: UnsafeMutableRawPointer?, _ result: OpaquePointer?) {
    guard let context, let result else { return }
    let connection = Unmanaged<PostgresConnection>.fromOpaque(context).takeUnretainedValue()
    let severity = PQresultErrorField(result, DiagnosticField.severityNonlocalized).map { String(cString: $0) }
    connection.noticeReceived(severity: severity)
}
