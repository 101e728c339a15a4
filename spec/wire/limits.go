package wire

// Limits shared by both peers. Each is checked in exactly one place in this
// package, so Core and the Runtime reject the same frames.
const (
	// MaxFrameBytes bounds one WebSocket message in either direction.
	MaxFrameBytes = 4 << 20
	// MaxRequestPayloadBytes bounds the encoded payload of a workspace read
	// or export request, checked before the request is admitted.
	MaxRequestPayloadBytes = 8 << 10
	// MaxIDBytes bounds correlation IDs (operation, suspension, request IDs).
	// An ID over the limit is never echoed back.
	MaxIDBytes = 128
	// MaxTraceBytes bounds trace metadata copied into replies; longer trace
	// data is omitted from the reply rather than rejected.
	MaxTraceBytes = 256
	// MaxReadBytes bounds the raw bytes of one workspace read result.
	MaxReadBytes = 1 << 20
	// ChunkBytes is the size of one runtime_prepare, workspace_write or
	// workspace_export data frame.
	ChunkBytes = 64 << 10
	// MaxChunkFrameBytes bounds one encoded chunk frame (base64 overhead included).
	MaxChunkFrameBytes = 96 << 10
	// MaxTransferBytes bounds a runtime_prepare or workspace_write body.
	MaxTransferBytes = 50 << 20
	// MaxPublicInlineWriteBytes is the public API's decoded inline write
	// bound, checked by Core before any Runtime work.
	MaxPublicInlineWriteBytes = 5 << 20
	// MaxRuntimePrepareFrameBytes bounds one encoded runtime_prepare frame.
	MaxRuntimePrepareFrameBytes = 1 << 20
	// MaxExportBytes bounds one workspace export archive.
	MaxExportBytes = 528 << 20
	// MaxDirectoryEntries bounds the names in one directory read result.
	MaxDirectoryEntries = 1024
	// MaxNameBytes bounds one directory entry name.
	MaxNameBytes = 255
	// MaxPathBytes bounds a workspace path.
	MaxPathBytes = 4096
	// MaxInputIDBytes bounds an active-input (prompt_steer) input ID.
	MaxInputIDBytes = 256
	// MaxHarnessConfigBytes bounds the harness_config object.
	MaxHarnessConfigBytes = 16 << 10
	// MaxPluginSlot is the highest runtime_prepare plugin slot.
	MaxPluginSlot = 49
	// MaxInitializationItems bounds environment variables or packages in one
	// runtime_prepare initialization.
	MaxInitializationItems = 1000
)
