import Streaming
import Testing

/// Which renditions a source gets: Apple's table, never upscaled, the display aspect kept.
@Suite("Ladder")
struct LadderTests {
    static func sizes(_ renditions: [Ladder.Rendition]) -> [String] { renditions.map { "\($0.width)x\($0.height)" } }

    /// The ladder `rungs` for a `width`×`height` source at `fps`.
    static func ladder(
        _ width: Int,
        _ height: Int,
        fps: Double? = 30,
        codec: Ladder.Codec = .h264,
        rungs: String = "auto"
    ) throws -> (renditions: [Ladder.Rendition], dropped: [String]) {
        try Ladder.renditions(rungs, codec: codec, source: .init(width: width, height: height, frameRate: fps))
    }

    @Test("auto on a 1080p 16:9 source: every H.264 rung, at the table's sizes and bit rates")
    func autoFullHD() throws {
        let (renditions, dropped) = try Self.ladder(1920, 1080, fps: 30)
        #expect(renditions.map(\.name) == ["234p", "360p", "432p", "480p", "540p", "720p", "1080p"])
        #expect(
            Self.sizes(renditions) == ["416x234", "640x360", "768x432", "854x480", "960x540", "1280x720", "1920x1080"]
        )
        #expect(renditions.map(\.bitRate) == [145_000, 365_000, 1_100_000, 1_500_000, 2_000_000, 4_500_000, 7_800_000])
        #expect(renditions.allSatisfy { $0.frameRate == nil } && dropped.isEmpty)
    }

    @Test("never upscaled: a 720p source drops 1080p; HEVC on 4K keeps all seven")
    func neverUpscaled() throws {
        let (renditions, dropped) = try Self.ladder(1280, 720, fps: 25)
        #expect(renditions.last?.name == "720p" && dropped == ["1080p"])
        let hevc = try Self.ladder(3840, 2160, fps: 24, codec: .hevc)
        #expect(hevc.renditions.map(\.name) == ["360p", "432p", "540p", "720p", "1080p", "1440p", "2160p"])
        #expect(hevc.renditions.last.map { "\($0.width)x\($0.height)" } == "3840x2160")
    }

    @Test("the display aspect kept: 4:3, portrait 9:16, a width that is not quite 16:9; bit rate by pixels")
    func aspect() throws {
        let fourThree = try Self.ladder(1440, 1080, rungs: "720p")
        #expect(Self.sizes(fourThree.renditions) == ["960x720"])
        #expect(fourThree.renditions.first?.bitRate == 3_375_000, "4,500,000 × 960·720 / 1280·720")
        let portrait = try Self.ladder(1080, 1920, rungs: "720p")
        #expect(Self.sizes(portrait.renditions) == ["720x1280"])
        #expect(portrait.renditions.first?.bitRate == 4_500_000)
        let odd = try Self.ladder(1918, 1080, rungs: "720p")
        #expect(Self.sizes(odd.renditions) == ["1278x720"], "the long side rounded to an even number")
    }

    @Test("rungs capped at 30 fps halve a 60 fps source; the others keep its rate")
    func frameRates() throws {
        let (renditions, _) = try Self.ladder(1920, 1080, fps: 59.94)
        #expect(renditions.prefix(3).allSatisfy { $0.frameRate == 29.97 })
        #expect(renditions.dropFirst(3).allSatisfy { $0.frameRate == nil })
    }

    @Test("a source smaller than every rung: one rendition at its own size")
    func tinySource() throws {
        let (renditions, dropped) = try Self.ladder(320, 180, fps: 30)
        #expect(Self.sizes(renditions) == ["320x180"] && renditions.first?.name == "180p")
        #expect(renditions.first?.bitRate == 86_000, "145,000 × 320·180 / 416·234")
        // Every rung is taller than the source: all seven are dropped, the lowest too (it was
        // listed nowhere, as if it had been made).
        #expect(dropped.count == 7 && dropped.contains("234p"), "\(dropped)")
    }

    @Test("named rungs: in table order, each once; unknown names and an empty list refused")
    func namedRungs() throws {
        let (renditions, _) = try Self.ladder(1920, 1080, rungs: "1080p, 720P,480p,720p")
        #expect(renditions.map(\.name) == ["480p", "720p", "1080p"])
        #expect(throws: Ladder.Problem.self) { try Self.ladder(1920, 1080, rungs: "999p") }
        #expect(throws: Ladder.Problem.emptyName("720p,")) { try Self.ladder(1920, 1080, rungs: "720p,") }
        #expect(throws: Ladder.Problem.empty) { try Self.ladder(1920, 1080, rungs: ",") }
        #expect(throws: Ladder.Problem.noPicture) {
            try Self.ladder(0, 0, fps: nil)
        }
    }
}
