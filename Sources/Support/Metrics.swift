import Foundation

/// Metrics in the Prometheus text format: counters, histograms and gauges, each a family of labelled series.
///
/// Thread safety: every method may be called from any thread; each family has its own lock.
public final class MetricsRegistry: @unchecked Sendable {
    private let lock = NSLock()
    private var families: [any MetricFamily] = []

    /// Creates an empty registry.
    public init() {}

    /// Registers a counter family.
    public func counter(_ name: String, help: String) -> Counter {
        register(Counter(name: name, help: help))
    }

    /// Registers a histogram family with upper bucket bounds in ascending order (`+Inf` is added).
    public func histogram(_ name: String, help: String, buckets: [Double]) -> Histogram {
        register(Histogram(name: name, help: help, buckets: buckets))
    }

    /// Registers a gauge whose series are read when the registry is rendered.
    public func gauge(_ name: String, help: String, read: @escaping @Sendable () -> [([Label], Double)]) {
        _ = register(Gauge(name: name, help: help, read: read))
    }

    /// Every family in the Prometheus text exposition format (version 0.0.4).
    public func render() -> String {
        let all = lock.withLock { families }
        return all.map { $0.render() }.joined()
    }

    private func register<F: MetricFamily>(_ family: F) -> F {
        lock.withLock { families.append(family) }
        return family
    }
}

/// A label name and value.
public typealias Label = (name: String, value: String)

protocol MetricFamily: AnyObject, Sendable {
    func render() -> String
}

/// A monotonically increasing count, per label set.
public final class Counter: MetricFamily, @unchecked Sendable {
    private let name: String
    private let help: String
    private let lock = NSLock()
    private var series: [String: Double] = [:]

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// Adds `amount` to the series with these labels.
    public func increment(_ labels: [Label] = [], by amount: Double = 1) {
        let key = labelText(labels)
        lock.withLock { series[key, default: 0] += amount }
    }

    /// The current value of one series.
    public func value(_ labels: [Label] = []) -> Double {
        let key = labelText(labels)
        return lock.withLock { series[key] ?? 0 }
    }

    func render() -> String {
        let snapshot = lock.withLock { series }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for key in snapshot.keys.sorted() {
            text += "\(name)\(key) \(format(snapshot[key] ?? 0))\n"
        }
        return text
    }
}

/// Observations counted into buckets, with their sum and count, per label set.
public final class Histogram: MetricFamily, @unchecked Sendable {
    private struct Series {
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    private let name: String
    private let help: String
    private let bounds: [Double]
    private let lock = NSLock()
    private var series: [String: Series] = [:]

    init(name: String, help: String, buckets: [Double]) {
        self.name = name
        self.help = help
        self.bounds = buckets.sorted()
    }

    /// Records one observation.
    public func observe(_ value: Double, _ labels: [Label] = []) {
        let key = labelText(labels)
        let slot = bounds.firstIndex { value <= $0 } ?? bounds.count
        lock.withLock {
            var entry = series[key] ?? Series(buckets: Array(repeating: 0, count: bounds.count + 1))
            entry.buckets[slot] += 1
            entry.sum += value
            entry.count += 1
            series[key] = entry
        }
    }

    func render() -> String {
        let snapshot = lock.withLock { series }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for key in snapshot.keys.sorted() {
            guard let entry = snapshot[key] else { continue }
            var cumulative: UInt64 = 0
            let inner = key.isEmpty ? "" : String(key.dropFirst().dropLast()) + ","
            for (index, bound) in (bounds + [Double.infinity]).enumerated() {
                cumulative += entry.buckets[index]
                let le = bound.isInfinite ? "+Inf" : format(bound)
                text += "\(name)_bucket{\(inner)le=\"\(le)\"} \(cumulative)\n"
            }
            text += "\(name)_sum\(key) \(format(entry.sum))\n\(name)_count\(key) \(entry.count)\n"
        }
        return text
    }
}

final class Gauge: MetricFamily, @unchecked Sendable {
    private let name: String
    private let help: String
    private let read: @Sendable () -> [([Label], Double)]

    init(name: String, help: String, read: @escaping @Sendable () -> [([Label], Double)]) {
        self.name = name
        self.help = help
        self.read = read
    }

    func render() -> String {
        var text = "# HELP \(name) \(help)\n# TYPE \(name) gauge\n"
        for (labels, value) in read() {
            text += "\(name)\(labelText(labels)) \(format(value))\n"
        }
        return text
    }
}

/// `{a="1",b="2"}`, or empty for no labels; values escaped as the format requires.
func labelText(_ labels: [Label]) -> String {
    guard !labels.isEmpty else { return "" }
    let body = labels.map { label in
        let escaped = label.value.replacingOccurrences(of: "\\", with: "\\\\")
            .replacingOccurrences(of: "\"", with: "\\\"").replacingOccurrences(of: "\n", with: "\\n")
        return "\(label.name)=\"\(escaped)\""
    }
    return "{" + body.joined(separator: ",") + "}"
}

private func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
