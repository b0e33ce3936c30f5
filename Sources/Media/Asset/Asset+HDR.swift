import CFFmpeg

extension Asset {
    /// The tracks, each HDR picture track's mastering display and content light level taken
    /// from its first picture when the container does not carry them (HEVC and AV1 keep them
    /// in the bitstream: SEI, metadata OBUs). Reads the input again from its start, decoding
    /// one picture per such track; a track that decodes nothing within `packets` packets (of
    /// any track), or
    /// an input that does not open again, keeps what its container said.
    public func tracksWithPictureMetadata(packets: Int = 1000) -> [AssetTrack] {
        let wanted = tracks.filter { track in
            track.mediaType == .video && track.isAttachedPicture != true && track.dynamicRange == .pq
                && (track.masteringDisplay == nil || track.contentLightLevel == nil)
        }
        guard !wanted.isEmpty, let again = try? Asset(location: location, limits: limits) else { return tracks }
        var found: [Int: (MasteringDisplay?, ContentLightLevel?)] = [:]
        for track in wanted {
            guard let decoder = try? again.makeDecoder(for: track) else { continue }
            if let metadata = again.firstPictureMetadata(track: track.index, decoder: decoder, packets: packets) {
                found[track.index] = metadata
            }
            try? again.input.seekToBeginning(startTime: again.startTime)
        }
        return tracks.map { track in
            guard let (display, light) = found[track.index] else { return track }
            var track = track
            track.masteringDisplay = track.masteringDisplay ?? display
            track.contentLightLevel = track.contentLightLevel ?? light
            return track
        }
    }

    /// `track` with its mastering display and light level from its first picture, when its
    /// container did not carry them (HDR kept: x265 writes them into the output's SEI).
    func withPictureMetadata(_ track: AssetTrack) -> AssetTrack {
        guard track.masteringDisplay == nil || track.contentLightLevel == nil else { return track }
        return tracksWithPictureMetadata().first { $0.index == track.index } ?? track
    }

    /// The HDR10 metadata of the first picture `decoder` makes of track `index`.
    private func firstPictureMetadata(
        track index: Int,
        decoder: CodecDecoder,
        packets limit: Int
    ) -> (MasteringDisplay?, ContentLightLevel?)? {
        let packet = Packet()
        let frame = Frame()
        var read = 0
        while read < limit {
            let status = input.read(into: packet.pointer)
            defer { av_packet_unref(packet.pointer) }
            // Every packet counts: a track that never gives a picture must not read the whole
            // input (for a URL, download it).
            read += 1
            if status < 0 {
                _ = decoder.send(nil)
            } else if packet.pointer.pointee.stream_index != Int32(index) {
                continue
            } else {
                _ = decoder.send(packet.pointer)
            }
            if decoder.receive(frame.pointer) >= 0 {
                defer { av_frame_unref(frame.pointer) }
                return Self.hdrMetadata(of: frame.pointer)
            }
            if status < 0 { return nil }
        }
        return nil
    }

    /// A decoded picture's mastering display and content light level (its side data).
    static func hdrMetadata(of frame: UnsafeMutablePointer<AVFrame>) -> (MasteringDisplay?, ContentLightLevel?) {
        var display: MasteringDisplay?
        var light: ContentLightLevel?
        if let data = av_frame_get_side_data(frame, AV_FRAME_DATA_MASTERING_DISPLAY_METADATA),
            data.pointee.size >= MemoryLayout<AVMasteringDisplayMetadata>.size
        {
            display = MasteringDisplay(
                UnsafeRawPointer(data.pointee.data).loadUnaligned(as: AVMasteringDisplayMetadata.self)
            )
        }
        if let data = av_frame_get_side_data(frame, AV_FRAME_DATA_CONTENT_LIGHT_LEVEL),
            data.pointee.size >= MemoryLayout<AVContentLightMetadata>.size
        {
            light = ContentLightLevel(
                UnsafeRawPointer(data.pointee.data).loadUnaligned(as: AVContentLightMetadata.self)
            )
        }
        return (display, light)
    }
}
