/// An asynchronous HTTP client over libcurl.
///
/// One background thread drives all transfers through a libcurl multi handle, so thousands of requests can wait
/// on slow servers at once without holding a thread each. Cancelling the calling task aborts its transfer.
///
/// ```swift
/// let client = try Client(configuration: .init(timeout: .seconds(5)))
/// defer { client.shutdown() }
/// let response = try await client.execute(ClientRequest(url: "https://graph.facebook.com/v21.0/me"))
/// ```
///
/// Ownership: owns a `TransferLoop` (its thread and multi handle); `shutdown()` or `deinit` stops it.
/// Thread safety: all methods may be called from any thread or task concurrently.
public final class Client: Sendable {
    /// The settings this client was created with.
    public let configuration: Configuration
    private let loop: TransferLoop

    /// Creates a client and starts its transfer thread.
    /// - Parameter configuration: timeouts, size limits, schemes and connection limits.
    /// - Throws: `ClientError.transport` when libcurl cannot be initialized.
    public init(configuration: Configuration = Configuration()) throws {
        self.configuration = configuration
        loop = try TransferLoop(configuration: configuration)
        loop.start()
    }

    deinit {
        loop.shutdown()
    }

    /// Sends `request` and returns the complete response.
    ///
    /// Any status code is a response. The calling task is suspended, not blocked, while the transfer runs.
    /// - Parameter request: the request.
    /// - Returns: the response.
    /// - Throws: `ClientError` with `.invalidURL`, `.invalidRequest` or `.disallowedScheme` before any connection
    ///   is made; `.connectFailed`, `.timeout`, `.responseTooLarge` or `.transport` from the transfer;
    ///   `.cancelled` when the task is cancelled; `.shutdown` after `shutdown()`.
    public func execute(_ request: ClientRequest) async throws -> ClientResponse {
        let transfer = try Transfer(request: request, configuration: configuration)
        let loop = self.loop
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { continuation in
                guard transfer.install(continuation) else {
                    return
                }
                loop.submit(transfer)
            }
        } onCancel: {
            transfer.fail(.cancelled)
            loop.cancel(transfer)
        }
    }

    /// Fails every pending transfer with `.shutdown`, stops the transfer thread and frees the libcurl handles.
    /// Later `execute` calls fail with `.shutdown`. Idempotent; returns once the thread has stopped.
    public func shutdown() {
        loop.shutdown()
    }
}
