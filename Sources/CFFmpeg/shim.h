// FFmpeg 5.1 for Swift: the headers, plus static inline wrappers for what Swift cannot import
// (function-like macros, compound literals). Swift imports static inline functions from a
// system-library header, so no separate C target is needed.
#ifndef CFFMPEG_SHIM_H
#define CFFMPEG_SHIM_H

#include <errno.h>
#include <libavformat/avformat.h>
#include <libavfilter/avfilter.h>
#include <libavfilter/buffersink.h>
#include <libavfilter/buffersrc.h>
#include <libavcodec/avcodec.h>
#include <libavutil/avutil.h>
#include <libavutil/audio_fifo.h>
#include <libavutil/channel_layout.h>
#include <libavutil/display.h>
#include <libavutil/dovi_meta.h>
#include <libavutil/error.h>
#include <libavutil/imgutils.h>
#include <libavutil/log.h>
#include <libavutil/mastering_display_metadata.h>
#include <libavutil/mathematics.h>
#include <libavutil/opt.h>
#include <libavutil/pixdesc.h>
#include <libavutil/samplefmt.h>
#include <libswscale/swscale.h>
#include <libswresample/swresample.h>

static inline int cff_averror(int e) { return AVERROR(e); }
static inline int cff_averror_eof(void) { return AVERROR_EOF; }
static inline int cff_averror_eagain(void) { return AVERROR(EAGAIN); }
static inline int cff_averror_exit(void) { return AVERROR_EXIT; }
static inline int cff_averror_invaliddata(void) { return AVERROR_INVALIDDATA; }
static inline int cff_averror_enoent(void) { return AVERROR(ENOENT); }
static inline int cff_averror_eacces(void) { return AVERROR(EACCES); }
static inline int cff_averror_enospc(void) { return AVERROR(ENOSPC); }
static inline int cff_averror_protocol_not_found(void) { return AVERROR_PROTOCOL_NOT_FOUND; }
static inline int cff_averror_demuxer_not_found(void) { return AVERROR_DEMUXER_NOT_FOUND; }
static inline int cff_averror_decoder_not_found(void) { return AVERROR_DECODER_NOT_FOUND; }
static inline int cff_averror_http_not_found(void) { return AVERROR_HTTP_NOT_FOUND; }
static inline int cff_averror_http_forbidden(void) { return AVERROR_HTTP_FORBIDDEN; }
static inline int cff_averror_http_unauthorized(void) { return AVERROR_HTTP_UNAUTHORIZED; }
static inline int cff_averror_http_bad_request(void) { return AVERROR_HTTP_BAD_REQUEST; }
static inline int cff_averror_http_other_4xx(void) { return AVERROR_HTTP_OTHER_4XX; }
static inline int cff_averror_http_server_error(void) { return AVERROR_HTTP_SERVER_ERROR; }
static inline int cff_averror_errno(int code) { return AVERROR(code); }

static inline int64_t cff_nopts_value(void) { return AV_NOPTS_VALUE; }
static inline AVRational cff_time_base_q(void) { return AV_TIME_BASE_Q; }
static inline int cff_time_base(void) { return AV_TIME_BASE; }
static inline uint32_t cff_mktag(char a, char b, char c, char d) { return MKTAG(a, b, c, d); }

/// av_err2str without the compound literal: writes into the caller's buffer.
static inline const char *cff_err2str(int errnum, char *buf, size_t size) {
    return av_make_error_string(buf, size, errnum);
}

#endif
