// SPDX-License-Identifier: Apache-2.0
// host/ops/custom_op.cpp: checking a plugin's custom op when it is created: the
// descriptor, then the SPIR-V module's interface against custom_op.h (magic and
// version, a GLCompute entry point of the given name, storage buffers in set 0
// at bindings 0..n_inputs, a push-constant block no larger than what the host
// pushes, the workgroup width). Strict where the module says something
// definite, lenient where it does not (e.g. a size given by an id we do not
// follow). The SPIR-V layout is from the SPIR-V 1.6 specification, §2.3-2.4.
#include "ops/custom_op.h"

#include <algorithm>
#include <atomic>
#include <map>

#include "ops/limits.h"
#include "vk/pipeline.h"

namespace tdm {
namespace {

constexpr uint32_t kSpirvMagic = 0x07230203;
constexpr uint32_t kMaxLocalSize = 1024;  // Vulkan's guaranteed maxComputeWorkGroupSize[0]

// Opcodes, decorations and enums used below.
enum : uint32_t {
    kOpEntryPoint = 15, kOpExecutionMode = 16, kOpTypeInt = 21, kOpTypeFloat = 22, kOpTypeVector = 23,
    kOpTypeArray = 28, kOpTypeStruct = 30, kOpTypePointer = 32, kOpConstant = 43, kOpConstantComposite = 44,
    kOpSpecConstant = 50, kOpSpecConstantComposite = 51, kOpVariable = 59, kOpDecorate = 71, kOpMemberDecorate = 72,
    kOpExecutionModeId = 331,
};
enum : uint32_t { kDecSpecId = 1, kDecArrayStride = 6, kDecBuiltIn = 11, kDecBinding = 33, kDecDescriptorSet = 34,
                  kDecOffset = 35 };
enum : uint32_t { kModelGLCompute = 5, kModeLocalSize = 17, kModeLocalSizeId = 38, kBuiltInWorkgroupSize = 25,
                  kStoragePushConstant = 9 };

// A literal string operand starting at words[0] (at most n words).
std::string literal_string(const uint32_t* words, uint32_t n) {
    std::string s;
    for (uint32_t w = 0; w < n; ++w)
        for (int b = 0; b < 4; ++b) {
            const char ch = char((words[w] >> (8 * b)) & 0xff);
            if (!ch) return s;
            s += ch;
        }
    return s;
}

// What the checks need from a module, gathered in one pass.
struct ModuleInfo {
    struct EntryPoint { uint32_t model, id; std::string name; };
    std::vector<EntryPoint> entry_points;
    std::map<uint32_t, uint32_t> local_size;      // entry id -> LocalSize x
    std::map<uint32_t, uint32_t> local_size_id;   // entry id -> LocalSizeId x (an id)
    std::vector<std::pair<uint32_t, uint32_t>> bindings, sets;  // (variable id, value)
    std::map<uint32_t, uint32_t> spec_id;         // constant id -> SpecId
    uint32_t workgroup_size_id = 0;               // the BuiltIn WorkgroupSize constant, 0 = none
    std::map<uint32_t, std::vector<uint32_t>> composites;  // (spec) constant composites: id -> constituents
    std::map<uint32_t, uint32_t> constants;       // 32-bit OpConstant id -> value
    std::map<uint32_t, uint32_t> scalar_bytes;    // int/float type id -> bytes
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> vectors;  // vector type -> (component type, count)
    std::map<uint32_t, std::pair<uint32_t, uint32_t>> arrays;   // array type -> (element type, length id)
    std::map<uint32_t, uint32_t> array_stride;
    std::map<uint32_t, std::vector<uint32_t>> structs;          // struct type -> member types
    std::map<std::pair<uint32_t, uint32_t>, uint32_t> member_offset;  // (struct, member) -> Offset
    std::map<uint32_t, uint32_t> pointee;                       // pointer type -> pointee
    std::vector<uint32_t> push_constant_types;                  // pointer types of PushConstant variables
};

Result<ModuleInfo> scan(const std::vector<uint32_t>& code, const std::string& op) {
    ModuleInfo m;
    for (size_t i = 5; i < code.size();) {
        const uint32_t opcode = code[i] & 0xffff, len = code[i] >> 16;
        if (len == 0 || i + len > code.size())
            return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': malformed SPIR-V instruction at word {}", op,
                                i);
        const uint32_t* a = code.data() + i + 1;
        const uint32_t n = len - 1;  // operand words
        switch (opcode) {
            case kOpEntryPoint:
                if (n >= 3) m.entry_points.push_back({a[0], a[1], literal_string(a + 2, n - 2)});
                break;
            case kOpExecutionMode:
                if (n >= 3 && a[1] == kModeLocalSize) m.local_size[a[0]] = a[2];
                break;
            case kOpExecutionModeId:
                if (n >= 3 && a[1] == kModeLocalSizeId) m.local_size_id[a[0]] = a[2];
                break;
            case kOpDecorate:
                if (n >= 3 && a[1] == kDecBinding) m.bindings.emplace_back(a[0], a[2]);
                if (n >= 3 && a[1] == kDecDescriptorSet) m.sets.emplace_back(a[0], a[2]);
                if (n >= 3 && a[1] == kDecSpecId) m.spec_id[a[0]] = a[2];
                if (n >= 3 && a[1] == kDecArrayStride) m.array_stride[a[0]] = a[2];
                if (n >= 3 && a[1] == kDecBuiltIn && a[2] == kBuiltInWorkgroupSize) m.workgroup_size_id = a[0];
                break;
            case kOpMemberDecorate:
                if (n >= 4 && a[2] == kDecOffset) m.member_offset[{a[0], a[1]}] = a[3];
                break;
            case kOpTypeInt:
            case kOpTypeFloat:
                if (n >= 2) m.scalar_bytes[a[0]] = a[1] / 8;
                break;
            case kOpTypeVector:
                if (n >= 3) m.vectors[a[0]] = {a[1], a[2]};
                break;
            case kOpTypeArray:
                if (n >= 3) m.arrays[a[0]] = {a[1], a[2]};
                break;
            case kOpTypeStruct:
                if (n >= 1) m.structs[a[0]] = std::vector<uint32_t>(a + 1, a + n);
                break;
            case kOpTypePointer:
                if (n >= 3) m.pointee[a[0]] = a[2];
                break;
            case kOpConstant:
            case kOpSpecConstant:
                if (n == 3) m.constants[a[1]] = a[2];
                break;
            case kOpConstantComposite:
            case kOpSpecConstantComposite:
                if (n >= 2) m.composites[a[1]] = std::vector<uint32_t>(a + 2, a + n);
                break;
            case kOpVariable:
                if (n >= 3 && a[2] == kStoragePushConstant) m.push_constant_types.push_back(a[0]);
                break;
            default: break;
        }
        i += len;
    }
    return m;
}

// Bytes of a type, 0 when it is something we do not follow (lenient). The
// module is untrusted: results are memoised per type id (a struct whose members
// repeat one nested type costs one visit per type, not one per path), sums are
// 64-bit and saturate at kTypeBytesCap, and depth is bounded.
constexpr uint64_t kTypeBytesCap = uint64_t(1) << 32;

uint64_t type_bytes(const ModuleInfo& m, uint32_t type, std::map<uint32_t, uint64_t>& memo, int depth = 0) {
    if (depth > 8) return 0;
    if (auto it = memo.find(type); it != memo.end()) return it->second;
    auto sat = [](uint64_t v) { return std::min(v, kTypeBytesCap); };
    uint64_t bytes = 0;
    if (auto s = m.scalar_bytes.find(type); s != m.scalar_bytes.end()) {
        bytes = s->second;
    } else if (auto v = m.vectors.find(type); v != m.vectors.end()) {
        bytes = sat(type_bytes(m, v->second.first, memo, depth + 1) * v->second.second);
    } else if (auto a = m.arrays.find(type); a != m.arrays.end()) {
        auto len = m.constants.find(a->second.second);
        auto stride = m.array_stride.find(type);
        if (len != m.constants.end() && stride != m.array_stride.end())
            bytes = sat(uint64_t(len->second) * stride->second);
    } else if (auto st = m.structs.find(type); st != m.structs.end()) {
        uint64_t end = 0;
        for (uint32_t k = 0; k < st->second.size(); ++k) {
            auto o = m.member_offset.find({type, k});
            const uint64_t b = type_bytes(m, st->second[k], memo, depth + 1);
            if (o == m.member_offset.end() || b == 0) {
                end = 0;
                break;
            }
            end = std::max(end, sat(uint64_t(o->second) + b));
        }
        bytes = end;
    }
    memo[type] = bytes;
    return bytes;
}

Status check_module(const CustomOp& op) {
    const std::string& on = op.name;
    const std::vector<uint32_t>& code = op.spirv;
    if (code[0] != kSpirvMagic)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom op '{}': not a SPIR-V module (magic 0x{:08x}, expected 0x{:08x})", on, code[0],
                            kSpirvMagic);
    const uint32_t major = (code[1] >> 16) & 0xff, minor = (code[1] >> 8) & 0xff;
    if (major != 1 || minor > 6)
        return Error::coded(TDM_ERR_UNSUPPORTED, "custom op '{}': SPIR-V version {}.{} (this host takes 1.0 .. 1.6)",
                            on, major, minor);
    const ModuleInfo m = TDM_TRY(scan(code, on));

    // The entry point.
    const ModuleInfo::EntryPoint* entry = nullptr;
    std::string found;
    for (const auto& e : m.entry_points) {
        if (e.model == kModelGLCompute && e.name == op.entry_point) entry = &e;
        found += fmt::format("{}'{}'{}", found.empty() ? "" : ", ", e.name, e.model == kModelGLCompute ? "" : " (not GLCompute)");
    }
    if (!entry)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': no GLCompute entry point '{}' (the module has {})",
                            on, op.entry_point, found.empty() ? "none" : found);

    // Descriptors: set 0, bindings 0..n_inputs, all storage buffers.
    for (const auto& [id, set] : m.sets)
        if (set != 0)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': descriptor set {} is used; only set 0 is", on,
                                set);
    for (const auto& [id, b] : m.bindings)
        if (b > op.n_inputs)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                                "custom op '{}': binding {} is outside 0..{} ({} inputs, then the output)", on, b,
                                op.n_inputs, op.n_inputs);
    auto reflected = vk::reflect_bindings(code.data(), code.size());
    if (!reflected.ok())
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': {}", on, reflected.error().message());
    for (size_t b = 0; b < reflected->types.size(); ++b)
        if (reflected->types[b] != VK_DESCRIPTOR_TYPE_STORAGE_BUFFER && reflected->types[b] != VK_DESCRIPTOR_TYPE_MAX_ENUM)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': binding {} is not a storage buffer", on, b);

    // The push-constant block must fit in what the host pushes.
    const uint32_t pushed = op.push_words() * 4;
    for (uint32_t ptr : m.push_constant_types) {
        auto t = m.pointee.find(ptr);
        std::map<uint32_t, uint64_t> memo;
        const uint64_t bytes = t == m.pointee.end() ? 0 : type_bytes(m, t->second, memo);
        if (bytes > pushed)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                                "custom op '{}': the shader's push-constant block is {} bytes, the host pushes {} (4 "
                                "output words, 3 per input for {} inputs, {} int and {} float params)",
                                on, bytes, pushed, op.n_inputs, op.n_int_params, op.n_float_params);
    }

    // The workgroup width: spec constant 0, or a literal equal to local_size_x.
    uint32_t width_id = 0;
    if (m.workgroup_size_id) {
        auto c = m.composites.find(m.workgroup_size_id);
        if (c != m.composites.end() && !c->second.empty()) width_id = c->second[0];
    } else if (auto l = m.local_size_id.find(entry->id); l != m.local_size_id.end()) {
        width_id = l->second;
    } else if (auto s = m.local_size.find(entry->id); s != m.local_size.end() && s->second != op.local_size_x) {
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom op '{}': the shader's workgroup width is {}, the descriptor's local_size_x {} "
                            "(declare layout(local_size_x_id = 0) in;)",
                            on, s->second, op.local_size_x);
    }
    if (width_id && !m.spec_id.count(width_id)) {  // a plain constant: must match
        auto v = m.constants.find(width_id);
        if (v != m.constants.end() && v->second != op.local_size_x)
            return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                                "custom op '{}': the shader's workgroup width is {}, the descriptor's local_size_x {} "
                                "(declare layout(local_size_x_id = 0) in;)",
                                on, v->second, op.local_size_x);
    } else if (width_id && m.spec_id.at(width_id) != 0) {
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom op '{}': the workgroup width is specialization constant {}; the host sets "
                            "constant 0 (layout(local_size_x_id = 0))",
                            on, m.spec_id.at(width_id));
    }
    return {};
}

}  // namespace

Result<std::unique_ptr<CustomOp>> make_custom_op(const tdm_custom_op_desc& d) {
    if (!d.name || !*d.name)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "tdm.custom_op: the descriptor has no name");
    auto op = std::make_unique<CustomOp>();
    op->name = d.name;
    const std::string& on = op->name;
    if (d.n_inputs < 1 || d.n_inputs > kMaxCustomOpInputs)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT, "custom op '{}': n_inputs {} is outside 1..{}", on, d.n_inputs,
                            kMaxCustomOpInputs);
    if (d.output_type != TDM_DTYPE_F32 && d.output_type != TDM_DTYPE_I32)
        return Error::coded(TDM_ERR_UNSUPPORTED, "custom op '{}': output_type {} (this host takes f32 or i32)", on,
                            d.output_type);
    if (d.dispatch != TDM_CUSTOM_DISPATCH_ELEMENTS && d.dispatch != TDM_CUSTOM_DISPATCH_ROWS)
        return Error::coded(TDM_ERR_UNSUPPORTED, "custom op '{}': unknown dispatch {} (this host knows 0 elements, 1 rows)",
                            on, d.dispatch);
    if (d.output_shape != TDM_CUSTOM_OUTPUT_LIKE_INPUT0 && d.output_shape != TDM_CUSTOM_OUTPUT_COLS_PARAM)
        return Error::coded(TDM_ERR_UNSUPPORTED,
                            "custom op '{}': unknown output_shape {} (this host knows 0 like input 0, 1 i[0] columns)",
                            on, d.output_shape);
    op->n_inputs = d.n_inputs;
    op->local_size_x = d.local_size_x ? d.local_size_x : 64;
    op->dispatch = tdm_custom_dispatch(d.dispatch);
    op->output_shape = tdm_custom_output_shape(d.output_shape);
    op->output_type = DType(d.output_type);
    op->n_int_params = d.n_int_params;
    op->n_float_params = d.n_float_params;
    op->entry_point = d.entry_point ? d.entry_point : "main";
    if (op->local_size_x > kMaxLocalSize)
        return Error::coded(TDM_ERR_LIMIT, "custom op '{}': local_size_x {} is over {}", on, op->local_size_x,
                            kMaxLocalSize);
    if (d.n_int_params > 16 || d.n_float_params > 8)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom op '{}': {} int and {} float params (tdm_op_desc has i[16] and f[8])", on,
                            d.n_int_params, d.n_float_params);
    if (op->push_words() * 4 > kMaxCustomOpPushBytes)
        return Error::coded(TDM_ERR_LIMIT,
                            "custom op '{}': {} push-constant bytes (4 output words, 3 per input for {} inputs, {} "
                            "int and {} float params), at most {}",
                            on, (4 + 3 * uint64_t(d.n_inputs) + d.n_int_params + uint64_t(d.n_float_params)) * 4,
                            d.n_inputs, d.n_int_params, d.n_float_params, kMaxCustomOpPushBytes);
    if (!d.spirv || d.spirv_bytes % 4 || d.spirv_bytes <= 20)
        return Error::coded(TDM_ERR_INVALID_ARGUMENT,
                            "custom op '{}': spirv_bytes {} is not a SPIR-V module size (a multiple of 4, over the "
                            "20-byte header)",
                            on, d.spirv_bytes);
    if (d.spirv_bytes > (64u << 20))
        return Error::coded(TDM_ERR_LIMIT, "custom op '{}': a SPIR-V module of {} bytes is over 64 MiB", on,
                            d.spirv_bytes);
    op->spirv.assign(d.spirv, d.spirv + d.spirv_bytes / 4);
    TDM_TRY(check_module(*op));
    static std::atomic<uint64_t> next_uid{1};
    op->uid = next_uid++;
    return op;
}

}  // namespace tdm
