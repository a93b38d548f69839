import Foundation
import Synchronization

/// Metrics in the Prometheus text format: counters, histograms and gauges, each a family of labelled series.
///
/// Thread safety: every method may be called from any thread; each family has its own lock.
public final class MetricsRegistry: Sendable {
    private let families = Locked<[any MetricFamily]>([])

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
        let all = families.withLock { $0 }
        return all.map { $0.render() }.joined()
    }

    private func register<F: MetricFamily>(_ family: F) -> F {
        families.withLock { $0.append(family) }
        return family
    }
}

/// A label name and value.
public typealias Label = (name: String, value: String)

protocol MetricFamily: AnyObject, Sendable {
    func render() -> String
}

/// A monotonically increasing count, per label set.
///
/// Hot callers resolve their series once with ``series(_:)`` and keep the handle: incrementing it takes one
/// uncontended lock and builds no label text (docs/performance.md, "Figures behind the code").
public final class Counter: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let series = Locked<[String: CounterSeries]>([:])

    init(name: String, help: String) {
        self.name = name
        self.help = help
    }

    /// The series with these labels, made on first use. Keep it to count without looking it up again.
    public func series(_ labels: [Label] = []) -> CounterSeries {
        let key = labelText(labels)
        return series.withLock { series in
            if let found = series[key] { return found }
            let made = CounterSeries()
            series[key] = made
            return made
        }
    }

    /// Adds `amount` to the series with these labels.
    public func increment(_ labels: [Label] = [], by amount: Double = 1) {
        series(labels).increment(by: amount)
    }

    /// The current value of one series.
    public func value(_ labels: [Label] = []) -> Double {
        let key = labelText(labels)
        return series.withLock { $0[key] }?.value ?? 0
    }

    func render() -> String {
        let snapshot = series.withLock { $0 }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) counter\n"
        for key in snapshot.keys.sorted() {
            text += "\(name)\(key) \(format(snapshot[key]?.value ?? 0))\n"
        }
        return text
    }
}

/// One series of a ``Counter``: the total as the bits of a `Double` in an atomic, added to by compare-and-swap,
/// so that the two libmicrohttpd threads counting the same series take no lock (docs/performance.md, round 3).
public final class CounterSeries: Sendable {
    private let bits = Atomic<UInt64>(0)

    /// Adds `amount`.
    public func increment(by amount: Double = 1) {
        atomicAdd(amount, to: bits)
    }

    /// The current value.
    public var value: Double { Double(bitPattern: bits.load(ordering: .relaxed)) }
}

/// Adds `amount` to the `Double` whose bits `cell` holds.
private func atomicAdd(_ amount: Double, to cell: borrowing Atomic<UInt64>) {
    var current = cell.load(ordering: .relaxed)
    while true {
        let next = (Double(bitPattern: current) + amount).bitPattern
        let (exchanged, original) = cell.compareExchange(expected: current, desired: next, ordering: .relaxed)
        if exchanged { return }
        current = original
    }
}

/// Observations counted into buckets, with their sum and count, per label set.
///
/// As with ``Counter``, hot callers keep the handle from ``series(_:)``.
public final class Histogram: MetricFamily, Sendable {
    private let name: String
    private let help: String
    private let bounds: [Double]
    private let series = Locked<[String: HistogramSeries]>([:])

    init(name: String, help: String, buckets: [Double]) {
        self.name = name
        self.help = help
        self.bounds = buckets.sorted()
    }

    /// The series with these labels, made on first use.
    public func series(_ labels: [Label] = []) -> HistogramSeries {
        let key = labelText(labels)
        return series.withLock { series in
            if let found = series[key] { return found }
            let made = HistogramSeries(bounds: bounds)
            series[key] = made
            return made
        }
    }

    /// Records one observation.
    public func observe(_ value: Double, _ labels: [Label] = []) {
        series(labels).observe(value)
    }

    func render() -> String {
        let snapshot = series.withLock { $0 }
        var text = "# HELP \(name) \(help)\n# TYPE \(name) histogram\n"
        for key in snapshot.keys.sorted() {
            guard let entry = snapshot[key]?.snapshot else { continue }
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

/// One series of a ``Histogram``: one atomic counter per bucket and the sum as `Double` bits in an atomic, so an
/// observation takes no lock. The count is the buckets' total, so a rendering always has `_count` equal to the
/// `+Inf` bucket; a rendering taken during an observation may see its bucket and not yet its sum.
///
/// Sendable: its cells are atomics in memory it allocates once and frees in `deinit`; only the pointer to them is
/// not `Sendable`, and it never changes.
public final class HistogramSeries: @unchecked Sendable {
    struct Snapshot {
        var buckets: [UInt64]
        var sum: Double = 0
        var count: UInt64 = 0
    }

    private let bounds: [Double]
    /// `bounds.count + 1` bucket counters (the last is `+Inf`), then the sum's bits. Allocated once, freed in deinit.
    private let cells: UnsafeMutablePointer<Atomic<UInt64>>

    init(bounds: [Double]) {
        self.bounds = bounds
        cells = .allocate(capacity: bounds.count + 2)
        for index in 0..<(bounds.count + 2) {
            (cells + index).initialize(to: Atomic(0))
        }
    }

    deinit {
        cells.deinitialize(count: bounds.count + 2)
        cells.deallocate()
    }

    /// Records one observation.
    public func observe(_ value: Double) {
        var slot = 0
        while slot < bounds.count, !(value <= bounds[slot]) { slot += 1 }
        cells[slot].wrappingAdd(1, ordering: .relaxed)
        atomicAdd(value, to: cells[bounds.count + 1])
    }

    var snapshot: Snapshot {
        var buckets: [UInt64] = []
        buckets.reserveCapacity(bounds.count + 1)
        for index in 0...bounds.count {
            buckets.append(cells[index].load(ordering: .relaxed))
        }
        let sum = Double(bitPattern: cells[bounds.count + 1].load(ordering: .relaxed))
        return Snapshot(buckets: buckets, sum: sum, count: buckets.reduce(0, +))
    }
}

/// A family whose series are read, by its `read` closure, when the registry is rendered.
final class Gauge: MetricFamily, Sendable {
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
        "\(label.name)=\"\(escapedLabelValue(label.value))\""
    }
    return "{" + body.joined(separator: ",") + "}"
}

/// A label value with backslashes, `"` and newlines escaped, as the text format requires.
private func escapedLabelValue(_ value: String) -> String {
    guard value.utf8.contains(where: { $0 == UInt8(ascii: "\\") || $0 == UInt8(ascii: "\"") || $0 == 0x0A }) else {
        return value
    }
    var escaped = ""
    for character in value.unicodeScalars {
        switch character {
        case "\\": escaped += "\\\\"
        case "\"": escaped += "\\\""
        case "\n": escaped += "\\n"
        default: escaped.unicodeScalars.append(character)
        }
    }
    return escaped
}

private func format(_ value: Double) -> String {
    value == value.rounded() && abs(value) < 1e15 ? String(Int64(value)) : String(value)
}
