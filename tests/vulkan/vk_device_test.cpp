// The Vulkan device's lifetime: the instance is the process's; a device and
// its pipelines are kept for the process too (with KILN_VULKAN_SHARE=0 a
// device goes with its last session); a lost device is replaced.
#include <gtest/gtest.h>

#include <cstdlib>
#include <memory>

#include "kiln/interpreter.h"
#include "kiln/net_builder.h"
#include "support/backend_compare.h"
#include "vk_device.h"

namespace kiln::test {
namespace {

std::vector<uint8_t> ReluNet() {
  NetBuilder b("relu");
  int x = b.addInput("x", fb::DataType::F32, {1, 4});
  b.addOutput(b.addOp(fb::OpType::Relu, "relu", {x}, {"y"})[0]);
  auto bytes = b.finish();
  EXPECT_TRUE(bytes.ok()) << bytes.status().ToString();
  return bytes.ok() ? *bytes : std::vector<uint8_t>{};
}

// NVIDIA's driver (H100, 580) refused vkCreateInstance with
// VK_ERROR_INCOMPATIBLE_DRIVER after a few dozen create/destroy cycles in one
// process, so a device released by its last session and got again must sit
// on the same instance, and many sessions in turn must all run on Vulkan.
TEST(VulkanDevice, InstanceOutlivesDevices) {
  KILN_REQUIRE_BACKEND(ForwardType::kVulkan);
  setenv("KILN_VULKAN_SHARE", "0", 1);  // devices come and go
  VkInstance first = VK_NULL_HANDLE;
  {
    auto d = VulkanDevice::Get(-1);
    ASSERT_TRUE(d.ok()) << d.status().ToString();
    first = (*d)->instance();
    ASSERT_NE(first, VK_NULL_HANDLE);
  }
  for (int i = 0; i < 40; ++i) {
    auto bytes = ReluNet();
    auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
    ASSERT_TRUE(interp.ok()) << interp.status().ToString();
    ScheduleConfig c;
    c.type = ForwardType::kVulkan;
    auto s = (*interp)->createSession(c);
    ASSERT_TRUE(s.ok()) << "session " << i << ": " << s.status().ToString();
    ASSERT_EQ((*s)->placement().ops_per_backend.count("vulkan"), 1u) << "session " << i;
    std::vector<float> y = RunOnce(interp->get(), *s, {1, 4}, {-1.f, 2.f, -3.f, 4.f});
    EXPECT_EQ(y, (std::vector<float>{0.f, 2.f, 0.f, 4.f})) << "session " << i;
    auto d = VulkanDevice::Get(-1);
    ASSERT_TRUE(d.ok()) << "session " << i << ": " << d.status().ToString();
    EXPECT_EQ((*d)->instance(), first) << "session " << i;
  }
  unsetenv("KILN_VULKAN_SHARE");
}

size_t PipelinesOf(VulkanDevice* d) {
  std::lock_guard<std::mutex> lock(d->pipelinesMutex());
  return d->pipelines().size();
}

// A session made, run and released, with sharing off or on; returns the
// device it ran on, as a weak reference.
std::weak_ptr<VulkanDevice> OneSession(const char* share) {
  setenv("KILN_VULKAN_SHARE", share, 1);
  std::weak_ptr<VulkanDevice> device;
  auto bytes = ReluNet();
  auto interp = Interpreter::createFromBuffer(bytes.data(), bytes.size());
  EXPECT_TRUE(interp.ok()) << interp.status().ToString();
  if (!interp.ok()) return device;
  ScheduleConfig c;
  c.type = ForwardType::kVulkan;
  auto s = (*interp)->createSession(c);
  EXPECT_TRUE(s.ok()) << s.status().ToString();
  if (!s.ok()) return device;
  EXPECT_EQ((*s)->placement().ops_per_backend.count("vulkan"), 1u);
  EXPECT_EQ(RunOnce(interp->get(), *s, {1, 4}, {-1.f, 2.f, -3.f, 4.f}), (std::vector<float>{0.f, 2.f, 0.f, 4.f}));
  auto d = VulkanDevice::Get(-1);
  EXPECT_TRUE(d.ok()) << d.status().ToString();
  if (d.ok()) device = *d;
  unsetenv("KILN_VULKAN_SHARE");
  return device;
}

// On an H100 a device cost ~200 ms a session; a later session of the
// process reuses the device and every pipeline an earlier one made.
TEST(VulkanDevice, KeptForTheProcessWithItsPipelines) {
  KILN_REQUIRE_BACKEND(ForwardType::kVulkan);
  EXPECT_TRUE(OneSession("0").expired()) << "KILN_VULKAN_SHARE=0: the device goes with its last session";

  std::weak_ptr<VulkanDevice> first = OneSession("1");
  std::shared_ptr<VulkanDevice> kept = first.lock();
  ASSERT_TRUE(kept) << "the device went with its session";
  const size_t made = PipelinesOf(kept.get());
  EXPECT_GT(made, 0u);
  std::weak_ptr<VulkanDevice> again = OneSession("1");
  EXPECT_EQ(again.lock(), kept) << "a second device made";
  EXPECT_EQ(PipelinesOf(kept.get()), made) << "the same model's pipelines made again";

  // A lost device is replaced at the next Get (its sessions keep it).
  kept->markLost();
  std::weak_ptr<VulkanDevice> after = OneSession("1");
  ASSERT_FALSE(after.expired());
  EXPECT_NE(after.lock(), kept) << "a lost device handed out again";
}

}  // namespace
}  // namespace kiln::test
