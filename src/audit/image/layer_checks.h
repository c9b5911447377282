// Consistency checks of image layers that need the whole scan: the descriptor's media type
// against the bytes actually read (compression sniffed from the magic, nesting counted by the
// decompressor), and tar hard links (a link must name a member stored before it, in its own layer
// or a lower one; loops and dangling links are refused by extractors).
//
// Failure behaviour: every problem is a Finding (error) with a rule id, the layer and a fix; the
// checks never fail. Thread safety: pure functions.
#pragma once

#include <string_view>
#include <vector>

#include "audit/image/oci_image.h"
#include "audit/report/finding.h"

namespace tg::audit {

// True for the layer media types of the OCI image spec and Docker's manifest v2 schema 2.
bool IsKnownLayerMediaType(std::string_view media_type);

// Findings for one layer's media type: `image.layer-media-type` (unknown type),
// `image.layer-compression-mismatch` (declared compression differs from the magic bytes) and
// `image.layer-nested-compression` (the decompressed stream was compressed again). A layer
// without a media type (legacy `docker save`) is checked for nesting only.
void CheckLayerMedia(const ImageLayer& layer, std::vector<Finding>* out);

// `image.hardlink-broken` findings for every hard link in `layers[i]` whose target is a later
// member of the same layer, part of a loop, or found neither earlier in that layer nor in a lower
// layer. Costs one index (4 bytes per entry) per layer consulted.
void CheckHardLinks(const std::vector<ImageLayer>& layers, std::vector<Finding>* out);

}  // namespace tg::audit
