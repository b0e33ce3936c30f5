/// The rules a ladder is held to before it is published (issue 29): each job checks its own
/// output and puts the findings in its result; a `must` finding fails the job. Pure: it judges
/// what was measured in the written files (durations, keyframes, sizes, configuration records)
/// against what the playlists declare.
public enum StreamingRules {
    public struct Finding: Sendable, Hashable, Codable, CustomStringConvertible {
        public enum Level: String, Sendable, Hashable, Codable {
            /// The ladder is wrong: the job fails and nothing is published.
            case must
            /// Worth knowing; the ladder plays.
            case should
        }

        public var level: Level
        /// The rule's number (1: keyframes, 2: durations, 3: declarations) and a short name.
        public var rule: String
        public var rendition: String?
        public var message: String

        public var description: String {
            "\(level.rawValue) (\(rule))" + (rendition.map { " \($0)" } ?? "") + ": \(message)"
        }
    }

    /// One rendition as written and as declared.
    public struct Rendition: Sendable, Hashable {
        public var name: String
        public var isVideo: Bool
        /// Each segment's duration (seconds), as the files hold them.
        public var segmentDurations: [Double]
        /// Whether each segment begins with an IDR frame (video).
        public var segmentsStartWithIDR: [Bool]
        /// The presentation time of each segment's first frame (seconds).
        public var segmentStarts: [Double]
        /// The duration of one frame (video) or one audio frame, for "within one frame".
        public var frameDuration: Double
        /// The media's duration by its samples.
        public var mediaDuration: Double
        /// What the playlists say: the target, the sum of EXTINF, CODECS and the bandwidths.
        public var targetDuration: Int
        public var declaredDuration: Double
        public var declaredCodecs: String
        public var measuredCodecs: String
        public var declaredBandwidth: Int?
        public var measuredPeak: Double?
        public var declaredAverage: Int?
        public var measuredAverage: Double?
        /// Width × height (video): a larger picture should declare more bandwidth.
        public var pixels: Int?

        public init(
            name: String,
            isVideo: Bool,
            segmentDurations: [Double],
            segmentsStartWithIDR: [Bool],
            segmentStarts: [Double],
            frameDuration: Double,
            mediaDuration: Double,
            targetDuration: Int,
            declaredDuration: Double,
            declaredCodecs: String,
            measuredCodecs: String
        ) {
            self.name = name
            self.isVideo = isVideo
            self.segmentDurations = segmentDurations
            self.segmentsStartWithIDR = segmentsStartWithIDR
            self.segmentStarts = segmentStarts
            self.frameDuration = frameDuration
            self.mediaDuration = mediaDuration
            self.targetDuration = targetDuration
            self.declaredDuration = declaredDuration
            self.declaredCodecs = declaredCodecs
            self.measuredCodecs = measuredCodecs
        }
    }

    /// How far keyframes of different renditions may lie apart (seconds).
    public static let keyframeTolerance = 0.001

    /// Every finding, `must` ones first.
    public static func check(_ renditions: [Rendition], playlistVersion: Int, hasMap: Bool) -> [Finding] {
        var findings: [Finding] = []
        func must(_ rule: String, _ rendition: String?, _ message: String) {
            findings.append(Finding(level: .must, rule: rule, rendition: rendition, message: message))
        }
        func should(_ rule: String, _ rendition: String?, _ message: String) {
            findings.append(Finding(level: .should, rule: rule, rendition: rendition, message: message))
        }
        let videos = renditions.filter(\.isVideo)
        // 1. Segments start with an IDR, at the same times in every video rendition.
        for video in videos {
            for (index, starts) in video.segmentsStartWithIDR.enumerated() where !starts {
                must("1 idr", video.name, "segment \(index + 1) does not start with an IDR frame")
            }
        }
        if let reference = videos.first {
            for video in videos.dropFirst() {
                let apart = zip(reference.segmentStarts, video.segmentStarts).map { abs($0 - $1) }.max() ?? 0
                if video.segmentStarts.count != reference.segmentStarts.count || apart > keyframeTolerance {
                    must(
                        "1 aligned",
                        video.name,
                        "its segments start at other times than \(reference.name)'s "
                            + "(\(video.segmentStarts.count) against \(reference.segmentStarts.count), up to \(milliseconds(apart)) apart)"
                    )
                }
            }
        }
        // 2. Durations: within the target, one target for all, covering the media.
        let targets = Set(renditions.map(\.targetDuration))
        if targets.count > 1 {
            must("2 target", nil, "the media playlists have different targets: \(targets.sorted())")
        }
        for rendition in renditions {
            for (index, duration) in rendition.segmentDurations.enumerated() {
                // Rounded to the nearest second (RFC 8216 §4.3.3.1), so at most 0.5 s over.
                if Int(duration.rounded()) > rendition.targetDuration {
                    must(
                        "2 target",
                        rendition.name,
                        "segment \(index + 1) lasts \(seconds(duration)), over the target \(rendition.targetDuration) s"
                    )
                }
            }
            if abs(rendition.declaredDuration - rendition.mediaDuration) > rendition.frameDuration {
                must(
                    "2 coverage",
                    rendition.name,
                    "its EXTINFs add up to \(seconds(rendition.declaredDuration)), its media lasts \(seconds(rendition.mediaDuration))"
                )
            }
        }
        if let longest = renditions.max(by: { $0.mediaDuration < $1.mediaDuration }),
            let shortest = renditions.min(by: { $0.mediaDuration < $1.mediaDuration }),
            longest.mediaDuration - shortest.mediaDuration
                > (longest.isVideo == shortest.isVideo
                    ? max(longest.frameDuration, shortest.frameDuration)
                    // Audio against video: a frame of each (AAC's priming and its last frame's
                    // padding are whole audio frames).
                    : longest.frameDuration + shortest.frameDuration)
        {
            must(
                "2 coverage",
                nil,
                "\(shortest.name) lasts \(seconds(shortest.mediaDuration)), \(longest.name) \(seconds(longest.mediaDuration))"
            )
        }
        // 3. What the master playlist declares.
        if hasMap && playlistVersion < 6 {
            must("3 version", nil, "EXT-X-VERSION \(playlistVersion) with EXT-X-MAP (6 at least)")
        }
        for rendition in renditions {
            if rendition.declaredCodecs != rendition.measuredCodecs {
                must(
                    "3 codecs",
                    rendition.name,
                    "CODECS says \(rendition.declaredCodecs), the stream is \(rendition.measuredCodecs)"
                )
            }
            if let declared = rendition.declaredBandwidth, let peak = rendition.measuredPeak {
                if Double(declared) < peak {
                    must("3 bandwidth", rendition.name, "BANDWIDTH \(declared) is below the measured peak \(Int(peak))")
                } else if Double(declared) > peak * 1.10 {
                    should(
                        "3 bandwidth",
                        rendition.name,
                        "BANDWIDTH \(declared) is over 1.10× the measured peak \(Int(peak))"
                    )
                }
            }
            if let declared = rendition.declaredAverage, let average = rendition.measuredAverage, average > 0,
                abs(Double(declared) - average) > average * 0.10
            {
                should(
                    "3 average",
                    rendition.name,
                    "AVERAGE-BANDWIDTH \(declared) is not within 10 % of the measured \(Int(average))"
                )
            }
        }
        // A player climbs the ladder by BANDWIDTH: a larger picture that declares less than a
        // smaller one is skipped or chosen out of turn (simple pictures at a low rung's size can
        // take more bits than at the source's).
        let sized = videos.filter { $0.pixels != nil && $0.declaredBandwidth != nil }
            .sorted { $0.pixels! < $1.pixels! }
        for (smaller, larger) in zip(sized, sized.dropFirst())
        where larger.declaredBandwidth! < smaller.declaredBandwidth! {
            should(
                "3 order",
                larger.name,
                "declares BANDWIDTH \(larger.declaredBandwidth!), less than the smaller \(smaller.name)'s \(smaller.declaredBandwidth!): players may pick them out of order"
            )
        }
        return findings.filter { $0.level == .must } + findings.filter { $0.level == .should }
    }

    static func seconds(_ value: Double) -> String { HLSPlaylists.decimal(value, places: 3) + " s" }
    static func milliseconds(_ value: Double) -> String { HLSPlaylists.decimal(value * 1000, places: 1) + " ms" }
}
