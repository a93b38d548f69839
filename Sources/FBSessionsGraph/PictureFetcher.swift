import FBSessionsCore
import Foundation
import HTTPClient
import Tracing

/// ``PictureFetching`` over `HTTPClient.Client`: one `GET` per hop, redirects followed here (never by libcurl)
/// and only to URLs the policy accepts, the body cut off at the size cap, one deadline for all hops.
///
/// - A redirect's target is resolved and checked before it is contacted; one outside the policy is refused
///   (`redirect`) without a request to it. More than `maxRedirects` hops is refused too.
/// - Before each hop the host is resolved (``resolver``) and, unless `FBS_PICTURE_HOSTS` names it exactly, every
///   address must be public (``PictureAddressRule``), else `address` is refused without a connection; the hop
///   then connects to exactly the checked addresses (`CURLOPT_RESOLVE`), so a second lookup (DNS rebinding)
///   cannot send it elsewhere.
/// - libcurl's own scheme list is https only (plus http when the policy allows it), a second lock on the door.
/// - The size cap is libcurl's `maxResponseBytes`: a larger `Content-Length` fails before the body, a larger
///   body stops the transfer when it passes the cap (`too_large`).
/// - Only a 200 whose `Content-Type` is a ``PictureImageType`` and whose bytes carry its magic number is
///   accepted (`content_type`, `not_an_image`); any other status is `unavailable(.status)`.
///
/// Ownership: holds a `Client`, its own (stopped by `shutdown()`) or a shared one (left running).
/// Thread safety: a value of `Sendable` parts; call from anywhere.
public struct PictureFetcher: PictureFetching {
    /// Resolves a host name to numeric addresses (the system resolver unless a test injects one).
    public typealias Resolver = @Sendable (String) async throws -> [String]

    let http: Client
    private let ownsHTTPClient: Bool
    private let resolver: Resolver
    /// Makes a `picture fetch` span for each fetch of a traced request; nil when tracing is off.
    private let tracer: Tracer?

    /// Creates a fetcher.
    /// - Parameters:
    ///   - allowsHTTP: whether libcurl may speak plain http (`FBS_PICTURE_ALLOW_HTTP`).
    ///   - httpClient: a client to share, or nil to make one.
    ///   - resolver: host name to addresses; `HostResolver.addresses(of:)` by default.
    /// - Throws: `ClientError` when libcurl cannot start.
    public init(allowsHTTP: Bool, httpClient: Client? = nil, resolver: Resolver? = nil, tracer: Tracer? = nil) throws {
        self.tracer = tracer
        self.resolver = resolver ?? { try await HostResolver.addresses(of: $0) }
        if let httpClient {
            http = httpClient
            ownsHTTPClient = false
        } else {
            http = try Client(
                configuration: .init(
                    timeout: .seconds(10), connectTimeout: .seconds(5), maxResponseBytes: 5_242_880,
                    followRedirects: false, allowedSchemes: allowsHTTP ? ["https", "http"] : ["https"],
                    userAgent: "fbsessiond"))
            ownsHTTPClient = true
        }
    }

    /// Stops the client this fetcher made; a shared one is left alone. Idempotent.
    public func shutdown() {
        if ownsHTTPClient { http.shutdown() }
    }

    /// For a traced request, the fetch (all its hops) is one CLIENT span `picture fetch` with the first host as
    /// `server.address`; never the URL, whose query is signed.
    public func fetch(_ url: PictureURL, policy: PictureURLPolicy, limits: PictureFetchLimits) async throws
        -> PictureDownload
    {
        guard let tracer, let span = tracer.child("picture fetch") else {
            return try await fetchUntraced(url, policy: policy, limits: limits)
        }
        span.set("http.request.method", "GET")
        span.set("server.address", url.host)
        defer { span.end() }
        do {
            let download = try await fetchUntraced(url, policy: policy, limits: limits)
            span.set("http.response.status_code", 200)
            return download
        } catch {
            span.setError("picture fetch failed")
            throw error
        }
    }

    private func fetchUntraced(_ url: PictureURL, policy: PictureURLPolicy, limits: PictureFetchLimits) async throws
        -> PictureDownload
    {
        let deadline = ContinuousClock.now + .milliseconds(Int64((limits.timeout * 1000).rounded()))
        var current = url
        var hops = 0
        while true {
            let remaining = ContinuousClock.now.duration(to: deadline)
            guard remaining > .milliseconds(1) else { throw PictureError.unavailable(.timeout) }
            let pinned = try await checkedAddresses(current, policy: policy)
            let response = try await get(current, pinned: pinned, remaining: remaining, maxBytes: limits.maxBytes)
            switch response.status {
            case 200:
                return try Self.image(response)
            case 301, 302, 303, 307, 308:
                hops += 1
                guard hops <= limits.maxRedirects, let location = response.header("location") else {
                    throw PictureError.refused(.redirect)
                }
                do {
                    current = try policy.resolve(location, against: current)
                } catch {
                    throw PictureError.refused(.redirect)
                }
            default:
                throw PictureError.unavailable(.status)
            }
        }
    }

    /// The `CURLOPT_RESOLVE` entry pinning `url`'s host to the addresses it resolves to now, after checking them:
    /// every one must be public unless the host is listed exactly. IP-literal hosts are checked as themselves.
    /// - Throws: ``PictureError/refused(_:)`` (`address`) for a non-public address;
    ///   ``PictureError/unavailable(_:)`` (`unreachable`) when the name does not resolve.
    func checkedAddresses(_ url: PictureURL, policy: PictureURLPolicy) async throws -> String {
        let addresses: [String]
        if PictureAddressRule.isIPv4Literal(url.host) {
            addresses = [url.host]
        } else {
            do {
                addresses = try await resolver(url.host)
            } catch {
                throw PictureError.unavailable(.unreachable)
            }
        }
        guard !addresses.isEmpty else { throw PictureError.unavailable(.unreachable) }
        if !policy.isListedExactly(host: url.host), !addresses.allSatisfy(PictureAddressRule.isPublic) {
            throw PictureError.refused(.address)
        }
        let port = url.port ?? (url.scheme == "https" ? 443 : 80)
        let list = addresses.map { $0.contains(":") ? "[\($0)]" : $0 }.joined(separator: ",")
        return "\(url.host):\(port):\(list)"
    }

    /// One `GET` to the pinned addresses, with libcurl's failures mapped to the picture errors.
    private func get(_ url: PictureURL, pinned: String, remaining: Duration, maxBytes: Int) async throws
        -> ClientResponse
    {
        do {
            var request = ClientRequest(
                url: url.text, headers: [("Accept", "image/png, image/jpeg, image/gif, image/webp")],
                timeout: remaining, maxResponseBytes: maxBytes)
            request.pinnedAddresses = [pinned]
            return try await http.execute(request)
        } catch let error as ClientError {
            switch error.code {
            case .responseTooLarge: throw PictureError.refused(.tooLarge)
            case .disallowedScheme: throw PictureError.refused(.scheme)
            case .invalidURL: throw PictureError.refused(.malformedURL)
            case .timeout: throw PictureError.unavailable(.timeout)
            case .cancelled: throw CancellationError()
            default: throw PictureError.unavailable(.unreachable)
            }
        }
    }

    /// The image of a 200, if its type is served and its bytes match it.
    static func image(_ response: ClientResponse) throws -> PictureDownload {
        guard let contentType = response.header("content-type"), let type = PictureImageType(contentType: contentType)
        else { throw PictureError.refused(.contentType) }
        guard type.matches(response.body) else { throw PictureError.refused(.notAnImage) }
        return PictureDownload(type: type, body: response.body)
    }
}
