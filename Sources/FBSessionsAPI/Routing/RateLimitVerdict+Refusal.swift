import RateLimiting

extension RateLimitVerdict {
    /// The error of a refused request: 429 `rate_limited` with `Retry-After` and both rate-limit fields.
    public var refusal: APIError {
        var error = APIError(
            429, .rateLimited,
            "This API key may make \(limit) requests per second on this instance (bursts of \(burst)); "
                + "retry after Retry-After seconds.")
        error.headers.add("Retry-After", String(retryAfter))
        addFields(to: &error.headers)
        return error
    }
}
