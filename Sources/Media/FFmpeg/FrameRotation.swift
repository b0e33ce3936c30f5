import CFFmpeg

extension Frame {
    /// Bytes per row of `plane`.
    func linesize(_ plane: Int) -> Int {
        withUnsafePointer(to: &pointer.pointee.linesize) {
            $0.withMemoryRebound(to: Int32.self, capacity: 8) { Int($0[plane]) }
        }
    }

    func plane(_ plane: Int) -> UnsafeMutablePointer<UInt8> { pointer.pointee.extended_data[plane]! }

    /// A copy of this planar YUV 4:2:0 frame (8 or 10 bits) rotated clockwise by 90, 180 or
    /// 270 degrees (the display matrix applied to the pixels, as the ffmpeg CLI's autorotate does).
    func rotated(clockwise degrees: Int) throws -> Frame {
        let format = AVPixelFormat(rawValue: pointer.pointee.format)
        let width = Int(self.width)
        let height = Int(self.height)
        let turned = degrees == 180 ? (width, height) : (height, width)
        let output = try Frame.video(width: Int32(turned.0), height: Int32(turned.1), format: format)
        if format == AV_PIX_FMT_YUV420P10LE {
            rotate(into: output, clockwise: degrees, as: UInt16.self)
        } else {
            rotate(into: output, clockwise: degrees, as: UInt8.self)
        }
        av_frame_copy_props(output.pointer, pointer)
        return output
    }

    /// The planes rotated into `output`, samples of type `Sample`.
    private func rotate<Sample>(into output: Frame, clockwise degrees: Int, as _: Sample.Type) {
        let width = Int(self.width)
        let height = Int(self.height)
        let size = MemoryLayout<Sample>.stride
        for index in 0..<3 {
            let sourceWidth = index == 0 ? width : (width + 1) / 2
            let sourceHeight = index == 0 ? height : (height + 1) / 2
            let source = UnsafeMutableRawPointer(plane(index)).assumingMemoryBound(to: Sample.self)
            let sourceStride = linesize(index) / size
            let target = UnsafeMutableRawPointer(output.plane(index)).assumingMemoryBound(to: Sample.self)
            let targetStride = output.linesize(index) / size
            switch degrees {
            case 90:
                // target row r is source column r, read bottom to top.
                for row in 0..<sourceWidth {
                    let line = target + row * targetStride
                    for column in 0..<sourceHeight {
                        line[column] = source[(sourceHeight - 1 - column) * sourceStride + row]
                    }
                }
            case 270:
                for row in 0..<sourceWidth {
                    let line = target + row * targetStride
                    for column in 0..<sourceHeight {
                        line[column] = source[column * sourceStride + (sourceWidth - 1 - row)]
                    }
                }
            default:
                for row in 0..<sourceHeight {
                    let line = target + row * targetStride
                    let from = source + (sourceHeight - 1 - row) * sourceStride
                    for column in 0..<sourceWidth {
                        line[column] = from[sourceWidth - 1 - column]
                    }
                }
            }
        }
    }
}
