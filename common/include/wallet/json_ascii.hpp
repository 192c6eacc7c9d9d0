// The SSE2 test behind wallet::json::plain_run and plain_ascii_run, for
// scanners that inline it (a JSON parser's strings end within their first
// sixteen bytes more often than not: no call per string).
#pragma once

#include <cstddef>
#include <string_view>

#include "wallet/json_util.hpp"

#if defined(__SSE2__)
#include <emmintrin.h>

namespace wallet::json {

// Bit i set where byte i of the block needs escaping in JSON text (a
// control character, DEL, '"' or '\\'), or, with kStopAtHigh, is 0x80 or above.
template <bool kStopAtHigh>
inline int special_bytes(__m128i block) noexcept {
    const __m128i last_control = _mm_set1_epi8(0x1f);
    // Unsigned c <= 0x1f exactly when max(c, 0x1f) == 0x1f.
    const __m128i control = _mm_cmpeq_epi8(_mm_max_epu8(block, last_control), last_control);
    const __m128i quote_or_backslash =
        _mm_or_si128(_mm_cmpeq_epi8(block, _mm_set1_epi8('"')), _mm_cmpeq_epi8(block, _mm_set1_epi8('\\')));
    const __m128i del = _mm_cmpeq_epi8(block, _mm_set1_epi8(0x7f));
    const int mask = _mm_movemask_epi8(_mm_or_si128(_mm_or_si128(control, quote_or_backslash), del));
    if constexpr (kStopAtHigh) return mask | _mm_movemask_epi8(block);
    return mask;
}

}  // namespace wallet::json
#endif

namespace wallet::json {

// plain_run with its common answer inline: a special byte among the first
// sixteen (where most strings of node text end) costs no call (json::Scanner
// and json::Tape; issue 31).
inline std::size_t plain_run_inline(std::string_view text) noexcept {
#if defined(__SSE2__)
    if (text.size() >= 16) {
        const int mask = special_bytes<false>(_mm_loadu_si128(reinterpret_cast<const __m128i*>(text.data())));
        if (mask != 0) return static_cast<std::size_t>(__builtin_ctz(static_cast<unsigned>(mask)));
    }
#endif
    return plain_run(text);
}

}  // namespace wallet::json
