import CFFmpeg

/// A chain of libavfilter's video filters with one input and one output (`AVFilterGraph`),
/// for the conversions swscale cannot make (HDR → SDR: `ToneMap`). Built for one picture size
/// and format; pictures go in with `filter`, each giving the pictures the chain has ready
/// (a chain of per-picture filters gives one for one).
final class FilterGraph {
    private var graph: UnsafeMutablePointer<AVFilterGraph>?
    private let source: UnsafeMutablePointer<AVFilterContext>
    private let sink: UnsafeMutablePointer<AVFilterContext>
    let description: String

    /// A graph running `chain` (filter syntax: `zscale=t=linear,format=gbrpf32le,…`) on
    /// pictures of `width`×`height` in `format`; `threads`: 0 for as many as the CPUs.
    init(chain: String, width: Int32, height: Int32, format: AVPixelFormat, threads: Int32 = 1) throws {
        description = chain
        guard let graph = avfilter_graph_alloc() else {
            throw FFError(code: cff_averror(ENOMEM), operation: "avfilter_graph_alloc")
        }
        self.graph = graph
        graph.pointee.nb_threads = threads
        var source: UnsafeMutablePointer<AVFilterContext>?
        var sink: UnsafeMutablePointer<AVFilterContext>?
        do {
            let arguments = "video_size=\(width)x\(height):pix_fmt=\(format.rawValue):time_base=1/1:pixel_aspect=1/1"
            _ = try check(
                avfilter_graph_create_filter(&source, avfilter_get_by_name("buffer"), "in", arguments, nil, graph),
                "avfilter_graph_create_filter(buffer)"
            )
            _ = try check(
                avfilter_graph_create_filter(&sink, avfilter_get_by_name("buffersink"), "out", nil, nil, graph),
                "avfilter_graph_create_filter(buffersink)"
            )
            // The chain's open ends: its input is the source's output "in", its output the sink's
            // input "out" (what parsing leaves of the lists is freed after it).
            var outputs = avfilter_inout_alloc()
            var inputs = avfilter_inout_alloc()
            defer {
                avfilter_inout_free(&outputs)
                avfilter_inout_free(&inputs)
            }
            guard let output = outputs, let input = inputs else {
                throw FFError(code: cff_averror(ENOMEM), operation: "avfilter_inout_alloc")
            }
            output.pointee.name = av_strdup("in")
            output.pointee.filter_ctx = source
            output.pointee.pad_idx = 0
            output.pointee.next = nil
            input.pointee.name = av_strdup("out")
            input.pointee.filter_ctx = sink
            input.pointee.pad_idx = 0
            input.pointee.next = nil
            _ = try check(avfilter_graph_parse_ptr(graph, chain, &inputs, &outputs, nil), "avfilter_graph_parse_ptr")
            _ = try check(avfilter_graph_config(graph, nil), "avfilter_graph_config")
        } catch {
            avfilter_graph_free(&self.graph)
            throw error
        }
        self.source = source!
        self.sink = sink!
    }

    deinit { avfilter_graph_free(&graph) }

    /// The pictures the chain makes of `frame` (its properties, timestamps included, kept).
    func filter(_ frame: UnsafeMutablePointer<AVFrame>) throws -> [Frame] {
        _ = try check(av_buffersrc_write_frame(source, frame), "av_buffersrc_write_frame")
        var pictures: [Frame] = []
        while true {
            let picture = Frame()
            let status = av_buffersink_get_frame(sink, picture.pointer)
            if status == cff_averror_eagain() || status == cff_averror_eof() { break }
            _ = try check(status, "av_buffersink_get_frame")
            pictures.append(picture)
        }
        return pictures
    }
}
