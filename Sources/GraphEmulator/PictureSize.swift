/// The pixel size a picture request asks for (docs/facebook-graph.md §5.1): `type` or `width`/`height`.
struct PictureSize: Sendable, Equatable {
    let width: Int
    let height: Int

    /// Historical sizes: square and small 50, normal 100, large and album 200 (square images; the emulator's
    /// pictures are square, so "variable height" is the width).
    static let types: [String: Int] = ["square": 50, "small": 50, "normal": 100, "large": 200, "album": 200]

    /// Resolves the parameters. `width`/`height` win over `type`; one of them alone gives a square; nothing gives
    /// 50×50. Sizes are clamped to 1…`limit`.
    static func resolve(type: String?, width: String?, height: String?, limit: Int) -> Result<PictureSize, GraphError> {
        func number(_ name: String, _ text: String?) -> Result<Int?, GraphError> {
            guard let text, !text.isEmpty else { return .success(nil) }
            guard RandomText.isNumeric(text), text.count <= 9, let value = Int(text) else {
                return .failure(.invalidParameter("Param \(name) must be a non-negative integer"))
            }
            return .success(min(max(value, 1), limit))
        }
        let requestedWidth: Int?
        let requestedHeight: Int?
        switch (number("width", width), number("height", height)) {
        case (.failure(let error), _), (_, .failure(let error)): return .failure(error)
        case (.success(let w), .success(let h)):
            requestedWidth = w
            requestedHeight = h
        }
        if requestedWidth != nil || requestedHeight != nil {
            let w = requestedWidth ?? requestedHeight ?? 50
            return .success(PictureSize(width: w, height: requestedHeight ?? w))
        }
        guard let type, !type.isEmpty else { return .success(PictureSize(width: 50, height: 50)) }
        guard let edge = types[type] else {
            return .failure(
                .invalidParameter("type must be one of the following values: small, normal, album, large, square"))
        }
        return .success(PictureSize(width: edge, height: edge))
    }
}
