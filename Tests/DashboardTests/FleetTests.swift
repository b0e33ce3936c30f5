import Foundation
import Queue
import Testing

@testable import Dashboard

/// The fleet page's arithmetic and charts.
@Suite("Dashboard fleet")
struct FleetTests {
    @Test("percentiles by nearest rank; minutes made from the jobs that ended")
    func minutes() {
        #expect(MinuteSample.percentile([], 0.5) == nil)
        #expect(MinuteSample.percentile([7], 0.95) == 7)
        let hundred = (1...100).map(Int64.init)
        #expect(MinuteSample.percentile(hundred, 0.50) == 50)
        #expect(MinuteSample.percentile(hundred, 0.95) == 95)
        #expect(MinuteSample.percentile([1, 2, 3, 4], 0.5) == 2)
        let sample = MinuteSample.make(
            minute: 10,
            ended: [
                .init(status: .completed, createdAt: 0, startedAt: 1000, finishedAt: 3000),
                .init(status: .failed, createdAt: 0, startedAt: 4000, finishedAt: 5000),
                .init(status: .cancelled, createdAt: 0, startedAt: nil, finishedAt: 600),
            ],
            queued: 3,
            running: 1,
            oldestQueuedAt: 9000,
            now: 10_000
        )
        #expect(sample.completed == 1 && sample.failed == 1 && sample.cancelled == 1)
        #expect(sample.waitP50 == 1000 && sample.waitP95 == 4000, "a job that never started has no wait")
        #expect(sample.runP50 == 1000 && sample.runP95 == 2000)
        #expect(sample.oldestQueuedMilliseconds == 1000)
        let filled = MinuteSample.zeroFilled([sample], from: 8, through: 11)
        #expect(filled.map(\.minute) == [8, 9, 10, 11])
        #expect(filled[0].completed == 0 && filled[0].queued == nil && filled[2] == sample)
        #expect(MinuteSample.zeroFilled([], from: 5, through: 4).isEmpty)
        #expect(MinuteSample.minute(of: Date(timeIntervalSince1970: 119.9)) == 1)
    }

    @Test("bars stack to scale; lines break where a value is missing; the summary reads the numbers")
    func charts() {
        let bars = SVGChart.bars(
            title: "Ended",
            unit: "jobs",
            [.init("completed", color: "#0a0", [4, 0, 2]), .init("failed", color: "#a00", [1, nil, 0])]
        )
        #expect(bars.hasPrefix("<svg") && bars.hasSuffix("</svg>"))
        #expect(bars.contains(#"role="img""#) && bars.contains("<title>Ended</title>"))
        #expect(bars.contains("completed: latest 2 jobs, highest 4 jobs; failed: latest 0 jobs, highest 1 jobs"))
        // Scale 0…5 over a 132 px plot from y 10: 4 jobs is 105.6 px, 1 job 26.4 px stacked on it (to the top).
        #expect(bars.contains(##"height="105.6" fill="#0a0""##))
        #expect(bars.contains(#"y="10.0" width="#) && bars.contains(##"height="26.4" fill="#a00""##))
        #expect(bars.components(separatedBy: "<rect").count - 1 == 3 + 2, "three bars and two legend keys")
        let lines = SVGChart.lines(title: "Depth", unit: "jobs", [.init("queued", color: "#00a", [1, 2, nil, 4])])
        let path = lines.components(separatedBy: "d=\"").dropFirst().first?.prefix { $0 != "\"" } ?? ""
        #expect(path.filter { $0 == "M" }.count == 2, "a gap starts a new line: \(path)")
        #expect(
            SVGChart.lines(title: "None", unit: "s", [.init("p50", color: "#000", [nil, nil])]).contains("no data")
        )
        let alone = SVGChart.lines(title: "One", unit: "s", [.init("p50", color: "#000", [nil, 3, nil, 1, 2])])
        #expect(alone.components(separatedBy: "<circle").count - 1 == 1, "a point alone is drawn as a dot")
        #expect(SVGChart.niceMaximum(0) == 1 && SVGChart.niceMaximum(3) == 5 && SVGChart.niceMaximum(1200) == 2000)
        #expect(SVGChart.escaped(#"<a "b">&"#) == "&lt;a &quot;b&quot;&gt;&amp;")
    }

    @Test("workers: live, silent or stopped by their heartbeat; running ones first")
    func workers() {
        let now = Date(timeIntervalSince1970: 1_000_000)
        func worker(_ name: String, heartbeat: TimeInterval, stopped: Bool = false, jobs: Int = 0) -> WorkerInfo {
            WorkerInfo(
                name: name,
                host: "h",
                pid: 1,
                version: "v",
                startedAt: now.addingTimeInterval(-3600),
                heartbeatAt: now.addingTimeInterval(-heartbeat),
                stoppedAt: stopped ? now : nil,
                runningJobs: (0..<jobs).map { JobID("job-\($0)") }
            )
        }
        let view = FleetView(
            frame: PageFrame(root: ""),
            workers: [
                worker("a", heartbeat: 5, stopped: true), worker("b", heartbeat: 300),
                worker("c", heartbeat: 2, jobs: 7),
            ],
            minutes: [],
            now: now
        )
        #expect(view.workers.map(\.name) == ["b", "c", "a"])
        #expect(view.workers.map(\.state) == ["silent", "live", "stopped"])
        #expect(view.workers[0].heartbeatAge == "5 min" && view.workers[1].heartbeatAge == "2 s")
        #expect(view.workers[1].running == 7 && view.workers[1].jobs.count == 5)
        #expect(view.workers.map(\.fps) == ["–", "–", "–"], "no running job read")
        // Two of c's jobs writing frames: their rates add up.
        let rates = [(0, 10.0, Int64(500)), (1, 5.0, Int64(1000))].map { index, seconds, frames in
            var job = Job.sample(id: JobID("job-\(index)"), status: .reading)
            job.startedAt = now.addingTimeInterval(-seconds)
            job.tracks = [
                JobTrack(
                    index: 0,
                    sourceIndex: 0,
                    mediaType: "video",
                    status: .reading,
                    codec: nil,
                    read: frames,
                    written: frames
                )
            ]
            return job
        }
        let busy = FleetView(
            frame: PageFrame(root: ""),
            workers: [worker("c", heartbeat: 2, jobs: 7)],
            runningJobs: rates,
            minutes: [],
            now: now
        )
        #expect(busy.workers[0].fps == "250 fps", "50 + 200")
        #expect(view.queued == "–" && view.recordedThrough == "never")
        let page = DashboardPages().render(view, as: "fleet")
        #expect(page.contains("<svg class=\"chart\"") && !page.contains("&lt;svg"), "the charts are markup, not text")
    }
}

@Suite("A split job's parts")
struct PartsBarTests {
    @Test("a segment per part as wide as its media, coloured by worker, filled by progress; names escaped")
    func bar() throws {
        func part(_ index: Int, _ status: JobStatus, seconds: Double, worker: String?, progress: Double) -> Job {
            var job = Job.sample(id: JobID("part-\(index)"), status: status)
            job.range = Job.Range(start: 0, duration: seconds)
            job.worker = worker
            job.progress = progress
            return job
        }
        let svg = try #require(
            PartsBar.draw([
                part(0, .completed, seconds: 30, worker: "w<1>", progress: 1),
                part(1, .reading, seconds: 60, worker: "w2", progress: 0.5),
                part(2, .failed, seconds: 30, worker: "w<1>", progress: 0.2),
                part(3, .unknown, seconds: 30, worker: nil, progress: 0),
            ])
        )
        // 150 s over 600: 120, 240, 120, 120 wide.
        #expect(
            svg.contains(#"<rect x="0.0" y="0" width="120.0""#) && svg.contains(#"<rect x="120.0" y="0" width="240.0""#)
        )
        #expect(
            svg.contains(##"<rect x="121.0" y="1" width="119.0" height="26" fill="#e07b00"/>"##),
            "half of 238, the second worker's colour"
        )
        #expect(svg.contains("Part 2: running on w2, 50 %") && svg.contains("Part 4: queued"))
        #expect(svg.contains(##"stroke="#c0392b""##), "the failed part is outlined")
        #expect(!svg.contains("w<1>") && svg.contains("w&lt;1&gt;"))
        #expect(svg.contains(#"aria-label="4 parts, 1 completed""#))
        #expect(PartsBar.draw([]) == nil)
    }
}

@Suite("Waveform drawing")
struct WaveformSVGTests {
    @Test("the loudest channel per column, many pixels to a column; what is not peaks is not drawn")
    func drawing() throws {
        // Two channels, 1,200 pixels: two pixels to each of 600 columns; the second channel is
        // the louder at pixel 3 (column 1).
        var data: [Int] = []
        for pixel in 0..<1200 {
            data += pixel == 3 ? [-100, 100, -32768, 32767] : [-1000, 1000, -10, 10]
        }
        let json =
            #"{"version":2,"channels":2,"bits":16,"length":1200,"data":[\#(data.map(String.init).joined(separator: ","))]}"#
        let svg = try #require(WaveformSVG.draw(Data(json.utf8)))
        let points = try #require(svg.split(separator: "points=\"").last?.split(separator: "\"").first)
            .split(separator: " ")
        #expect(points.count == 1200, "600 columns, a top and a bottom each")
        #expect(points[1] == "1.0,0.0" && points[0] == "0.0,58.2")
        // A quiet recording fills the height: scaled to its loudest peak (3,276 of 32,768).
        let quiet = try #require(
            WaveformSVG.draw(Data(#"{"bits":16,"channels":1,"data":[-3276,3276,-1638,1638]}"#.utf8))
        )
        #expect(quiet.contains(#"points="0.0,0.0 300.0,30.0 300.0,90.0 0.0,120.0""#), "\(quiet)")
        #expect(WaveformSVG.draw(Data(#"{"bits":16,"channels":1,"data":[1,2,3]}"#.utf8)) == nil, "an odd count")
        #expect(WaveformSVG.draw(Data(#"{"bits":12,"data":[1,2]}"#.utf8)) == nil)
        #expect(
            WaveformSVG.draw(Data(#"{"bits":8,"channels":4611686018427387904,"data":[1,2]}"#.utf8)) == nil,
            "no overflow"
        )
        #expect(WaveformSVG.draw(Data(#"{"bits":8,"channels":0,"data":[1,2]}"#.utf8)) == nil)
        #expect(WaveformSVG.draw(Data("not json".utf8)) == nil)
        #expect(WaveformSVG.draw(Data(#"{"data":[]}"#.utf8)) == nil)
    }
}
