// SPDX-License-Identifier: Apache-2.0
// Placeholder translation unit for a host area that has no sources yet.
