// protobufjs with its reflection and the descriptor extension (Root.fromDescriptor), which builds the types of a
// FileDescriptorSet such as the one a Foxglove server advertises for a protobuf channel. Bundled as one script
// that sets the global `protobuf`.
require("protobufjs/ext/descriptor");
module.exports = require("protobufjs");
