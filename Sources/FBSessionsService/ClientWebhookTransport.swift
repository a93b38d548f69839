import FBSessionsCore
import HTTPClient

/// ``WebhookTransport`` over an `HTTPClient.Client`: redirects are not followed and at most
/// `maxResponseBytes` of an answer are read (only the status matters).
public struct ClientWebhookTransport: WebhookTransport {
    /// The client; not owned (shut it down after the dispatcher has stopped).
    public let client: Client
    /// The largest answer body read.
    public var maxResponseBytes = 64 * 1024

    /// A transport over `client`.
    public init(client: Client) {
        self.client = client
    }

    public func post(url: String, headers: [(String, String)], body: [UInt8], timeout: Duration) async throws -> Int {
        let request = ClientRequest(
            method: "POST", url: url, headers: headers, body: body, timeout: timeout, maxResponseBytes: maxResponseBytes
        )
        do {
            return try await client.execute(request).status
        } catch let error as ClientError {
            throw WebhookTransportError(
                problem: error.code.description, isCancellation: error.code == .cancelled || error.code == .shutdown)
        }
    }
}
