// The Vulkan device's lifetime: the instance is the process's, kept while
// devices come and go with their sessions.
#include <gtest/gtest.h>

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
}

}  // namespace
}  // namespace kiln::test
