internal import CLibPQ
import Foundation

extension PostgresConnection {
    /// Checks, without a round trip, whether an idle connection still has a live session.
    ///
    /// A healthy idle connection has nothing to read. If the socket is readable, the server spoke first:
    /// after `pg_terminate_backend` or a server shutdown or crash it sends a FATAL message and closes the
    /// socket. The pending input is consumed (libpq hands an idle-time error to the notice receiver, which
    /// flags FATAL) and libpq notices the end of the stream, so a dead session is found before any
    /// statement is sent.
    ///
    /// - Returns: False if the connection is closed, bad, ended by the server or inside a transaction.
    func isAliveWhileIdle() -> Bool {
        guard isUsable, let handle else { return false }
        let socket = PQsocket(handle)
        guard socket >= 0 else { return false }
        for _ in 0..<4 {
            var descriptor = pollfd(fd: socket, events: Int16(POLLIN), revents: 0)
            let ready = poll(&descriptor, 1, 0)
            if ready == 0 {
                break
            }
            if ready < 0 {
                if errno == EINTR {
                    continue
                }
                return false
            }
            if PQconsumeInput(handle) == 0 {
                return false
            }
            _ = PQisBusy(handle)  // Parses what arrived: notices and parameter changes.
            if !isUsable {
                return false
            }
        }
        return isUsable && PQtransactionStatus(handle) == PQTRANS_IDLE
    }

    /// Leaves the connection ready for its next user: rolls back a transaction that `body` left open and
    /// closes the connection if it is broken or its state is unclear.
    func resetAfterUse() {
        guard isUsable, let handle else {
            close()
            return
        }
        switch PQtransactionStatus(handle) {
        case PQTRANS_IDLE:
            return
        case PQTRANS_INTRANS, PQTRANS_INERROR:
            _ = try? simpleQuery(unsafeSQL: "ROLLBACK")
            if !isUsable || PQtransactionStatus(handle) != PQTRANS_IDLE {
                close()
            }
        default:
            close()
        }
    }
}
