// SPDX-License-Identifier: MIT
// tandem/cpp/tandem.hpp: the SDK's C++ helpers in one include. Header-only,
// C++17, namespace tdm::sdk; they compile into the plugin and are not part of
// the binary ABI (the ABI is the C headers one directory up). Each header can
// also be included alone:
//
//   status.hpp       Err, fail(), Status, TDM_SDK_TRY, guard() (no exception crosses the ABI)
//   structs.hpp      read_struct() / write_struct(): the struct_size rules of tandem.h section 1
//   host.hpp         Host (which table entries exist), OpQuery, require_ops(), require_extension()
//   hparams.hpp      HparamReader: range-checked metadata, several spellings per key
//   weights.hpp      TensorName tables, WeightLoader / WeightRequest, NameList
//   descriptors.hpp  ArchDesc, DraftHeadDesc, DrafterDesc, PluginApi, full_attention(), ...,
//                    negotiate(), TDM_SDK_PLUGIN_ENTRY
//   drafter.hpp      Drafter: a draftless drafter as a C++ class, drafter_desc()
//
// sdk/WRITING_A_PLUGIN.md walks through a plugin built with them.
#ifndef TANDEM_CPP_TANDEM_HPP
#define TANDEM_CPP_TANDEM_HPP

#include "descriptors.hpp"
#include "drafter.hpp"
#include "host.hpp"
#include "hparams.hpp"
#include "status.hpp"
#include "structs.hpp"
#include "weights.hpp"

#endif  // TANDEM_CPP_TANDEM_HPP
