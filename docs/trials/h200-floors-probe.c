/* H200 probe (experiment, not part of cubec): floors of transfers, dependent dispatches, copy
 * kernels, round trips and submission costs, in raw Vulkan. */
#define _GNU_SOURCE
#include "spv.h"
#include <pthread.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <vulkan/vulkan.h>

#define CK(x)                                                                                      \
    do {                                                                                           \
        VkResult r_ = (x);                                                                         \
        if (r_) {                                                                                  \
            fprintf(stderr, "%s:%d %s -> %d\n", __FILE__, __LINE__, #x, r_);                       \
            exit(1);                                                                               \
        }                                                                                          \
    } while (0)
static double now(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec * 1e-9;
}
static int cmpd(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return x < y ? -1 : x > y;
}
static double median(double *v, int n)
{
    qsort(v, n, sizeof *v, cmpd);
    return v[n / 2];
}
static double pct(double *v, int n, double p)
{
    qsort(v, n, sizeof *v, cmpd);
    return v[(int)(n * p)];
}

static VkInstance inst;
static VkPhysicalDevice pd;
static VkDevice dev;
static VkPhysicalDeviceProperties props;
static VkPhysicalDeviceMemoryProperties mp;
enum { GC, C, T, C2, C3, NF };
static uint32_t fam[NF] = {~0u, ~0u, ~0u, ~0u, ~0u}, famq[NF], famts[NF];
static VkQueue q[NF], q_t2;
static VkCommandPool pool[NF];
static uint32_t uniq[NF], nuniq;
static PFN_vkCmdPushDescriptorSetKHR pushdesc;
static PFN_vkGetMemoryHostPointerPropertiesEXT hostptrprops;
static VkQueryPool qp;
static VkSemaphore tl;
static uint64_t tlv;
static const char *fname[NF] = {"gc", "c", "t", "c2", "c3"};

static uint32_t mtype(uint32_t bits, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid)
{
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits >> i & 1) && (mp.memoryTypes[i].propertyFlags & want) == want &&
            !(mp.memoryTypes[i].propertyFlags & avoid))
            return i;
    for (uint32_t i = 0; i < mp.memoryTypeCount; i++)
        if ((bits >> i & 1) && (mp.memoryTypes[i].propertyFlags & want) == want) return i;
    fprintf(stderr, "no memory type\n");
    exit(1);
}
typedef struct {
    VkBuffer b;
    VkDeviceMemory m;
    void *map;
    VkDeviceSize size;
} buf;
static const VkBufferUsageFlags ALLU =
    VK_BUFFER_USAGE_STORAGE_BUFFER_BIT | VK_BUFFER_USAGE_TRANSFER_SRC_BIT |
    VK_BUFFER_USAGE_TRANSFER_DST_BIT | VK_BUFFER_USAGE_UNIFORM_BUFFER_BIT;
static buf mkbuf(VkDeviceSize size, VkMemoryPropertyFlags want, VkMemoryPropertyFlags avoid,
                 void *import)
{
    buf r = {.size = size};
    VkExternalMemoryBufferCreateInfo ext = {
        .sType = VK_STRUCTURE_TYPE_EXTERNAL_MEMORY_BUFFER_CREATE_INFO,
        .handleTypes = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT};
    VkBufferCreateInfo bci = {.sType = VK_STRUCTURE_TYPE_BUFFER_CREATE_INFO,
                              .pNext = import ? &ext : NULL,
                              .size = size,
                              .usage = ALLU,
                              .sharingMode = nuniq > 1 ? VK_SHARING_MODE_CONCURRENT
                                                       : VK_SHARING_MODE_EXCLUSIVE,
                              .queueFamilyIndexCount = nuniq,
                              .pQueueFamilyIndices = uniq};
    CK(vkCreateBuffer(dev, &bci, NULL, &r.b));
    VkMemoryRequirements req;
    vkGetBufferMemoryRequirements(dev, r.b, &req);
    VkImportMemoryHostPointerInfoEXT imp = {
        .sType = VK_STRUCTURE_TYPE_IMPORT_MEMORY_HOST_POINTER_INFO_EXT,
        .handleType = VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT,
        .pHostPointer = import};
    uint32_t bits = req.memoryTypeBits;
    if (import) {
        VkMemoryHostPointerPropertiesEXT hp = {
            .sType = VK_STRUCTURE_TYPE_MEMORY_HOST_POINTER_PROPERTIES_EXT};
        CK(hostptrprops(dev, VK_EXTERNAL_MEMORY_HANDLE_TYPE_HOST_ALLOCATION_BIT_EXT, import, &hp));
        bits &= hp.memoryTypeBits;
    }
    VkMemoryAllocateInfo mai = {.sType = VK_STRUCTURE_TYPE_MEMORY_ALLOCATE_INFO,
                                .pNext = import ? &imp : NULL,
                                .allocationSize = import ? size : req.size,
                                .memoryTypeIndex = mtype(bits, want, avoid)};
    CK(vkAllocateMemory(dev, &mai, NULL, &r.m));
    CK(vkBindBufferMemory(dev, r.b, r.m, 0));
    if (want & VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT)
        CK(vkMapMemory(dev, r.m, 0, VK_WHOLE_SIZE, 0, &r.map));
    return r;
}
static void freebuf(buf *b)
{
    vkDestroyBuffer(dev, b->b, NULL);
    vkFreeMemory(dev, b->m, NULL);
    memset(b, 0, sizeof *b);
}
#define DEVMEM VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT
#define HOSTMEM                                                                                    \
    (VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT | VK_MEMORY_PROPERTY_HOST_COHERENT_BIT),                  \
        VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT

static VkCommandBuffer newcmd(int f)
{
    VkCommandBuffer c;
    VkCommandBufferAllocateInfo ai = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_ALLOCATE_INFO,
                                      .commandPool = pool[f],
                                      .level = VK_COMMAND_BUFFER_LEVEL_PRIMARY,
                                      .commandBufferCount = 1};
    CK(vkAllocateCommandBuffers(dev, &ai, &c));
    return c;
}
static void begin(VkCommandBuffer c)
{
    VkCommandBufferBeginInfo bi = {.sType = VK_STRUCTURE_TYPE_COMMAND_BUFFER_BEGIN_INFO};
    CK(vkBeginCommandBuffer(c, &bi));
}
/* submit with a timeline signal, returns the value */
static uint64_t submit(VkQueue qq, VkCommandBuffer c)
{
    uint64_t v = ++tlv;
    VkTimelineSemaphoreSubmitInfo ts = {.sType = VK_STRUCTURE_TYPE_TIMELINE_SEMAPHORE_SUBMIT_INFO,
                                        .signalSemaphoreValueCount = 1,
                                        .pSignalSemaphoreValues = &v};
    VkSubmitInfo si = {.sType = VK_STRUCTURE_TYPE_SUBMIT_INFO,
                       .pNext = &ts,
                       .commandBufferCount = 1,
                       .pCommandBuffers = &c,
                       .signalSemaphoreCount = 1,
                       .pSignalSemaphores = &tl};
    CK(vkQueueSubmit(qq, 1, &si, VK_NULL_HANDLE));
    return v;
}
static void waitv(uint64_t v)
{
    VkSemaphoreWaitInfo wi = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_WAIT_INFO,
                              .semaphoreCount = 1,
                              .pSemaphores = &tl,
                              .pValues = &v};
    CK(vkWaitSemaphores(dev, &wi, UINT64_MAX));
}
static void spinv(uint64_t v)
{
    uint64_t x = 0;
    do
        CK(vkGetSemaphoreCounterValue(dev, tl, &x));
    while (x < v);
}
static void runwait(int f, VkCommandBuffer c)
{
    CK(vkEndCommandBuffer(c));
    waitv(submit(q[f], c));
}
static double tsread(uint32_t first)
{
    uint64_t t[2];
    CK(vkGetQueryPoolResults(dev, qp, first, 2, sizeof t, t, 8,
                             VK_QUERY_RESULT_64_BIT | VK_QUERY_RESULT_WAIT_BIT));
    return (double)(t[1] - t[0]) * props.limits.timestampPeriod * 1e-9;
}

typedef struct {
    VkShaderModule m;
    VkDescriptorSetLayout sl;
    VkPipelineLayout pl;
    VkPipeline p;
} kpipe;
static kpipe mkpipe(const unsigned char *code, unsigned len, int nstorage, int ubo_at1,
                    uint32_t pcsize, int wg)
{
    kpipe r;
    VkShaderModuleCreateInfo smci = {.sType = VK_STRUCTURE_TYPE_SHADER_MODULE_CREATE_INFO,
                                     .codeSize = len,
                                     .pCode = (const uint32_t *)code};
    CK(vkCreateShaderModule(dev, &smci, NULL, &r.m));
    VkDescriptorSetLayoutBinding b[4];
    int n = 0;
    for (int i = 0; i < nstorage; i++)
        b[n++] = (VkDescriptorSetLayoutBinding){(uint32_t)i, VK_DESCRIPTOR_TYPE_STORAGE_BUFFER, 1,
                                                VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    if (ubo_at1)
        b[n++] = (VkDescriptorSetLayoutBinding){1, VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER, 1,
                                                VK_SHADER_STAGE_COMPUTE_BIT, NULL};
    VkDescriptorSetLayoutCreateInfo dl = {
        .sType = VK_STRUCTURE_TYPE_DESCRIPTOR_SET_LAYOUT_CREATE_INFO,
        .flags = VK_DESCRIPTOR_SET_LAYOUT_CREATE_PUSH_DESCRIPTOR_BIT_KHR,
        .bindingCount = n,
        .pBindings = b};
    CK(vkCreateDescriptorSetLayout(dev, &dl, NULL, &r.sl));
    VkPushConstantRange pr = {VK_SHADER_STAGE_COMPUTE_BIT, 0, pcsize};
    VkPipelineLayoutCreateInfo plci = {.sType = VK_STRUCTURE_TYPE_PIPELINE_LAYOUT_CREATE_INFO,
                                       .setLayoutCount = 1,
                                       .pSetLayouts = &r.sl,
                                       .pushConstantRangeCount = pcsize ? 1 : 0,
                                       .pPushConstantRanges = &pr};
    CK(vkCreatePipelineLayout(dev, &plci, NULL, &r.pl));
    VkSpecializationMapEntry me = {0, 0, 4};
    uint32_t wgv = (uint32_t)wg;
    VkSpecializationInfo spi = {1, &me, 4, &wgv};
    VkComputePipelineCreateInfo cp = {
        .sType = VK_STRUCTURE_TYPE_COMPUTE_PIPELINE_CREATE_INFO,
        .stage = {.sType = VK_STRUCTURE_TYPE_PIPELINE_SHADER_STAGE_CREATE_INFO,
                  .stage = VK_SHADER_STAGE_COMPUTE_BIT,
                  .module = r.m,
                  .pName = "main",
                  .pSpecializationInfo = wg ? &spi : NULL},
        .layout = r.pl};
    CK(vkCreateComputePipelines(dev, VK_NULL_HANDLE, 1, &cp, NULL, &r.p));
    return r;
}
static void bindbufs(VkCommandBuffer c, kpipe *p, buf **bs, int n, buf *ubo)
{
    VkDescriptorBufferInfo inf[4];
    VkWriteDescriptorSet w[4];
    for (int i = 0; i < n + (ubo ? 1 : 0); i++) {
        buf *x = i < n ? bs[i] : ubo;
        inf[i] = (VkDescriptorBufferInfo){x->b, 0, VK_WHOLE_SIZE};
        w[i] = (VkWriteDescriptorSet){.sType = VK_STRUCTURE_TYPE_WRITE_DESCRIPTOR_SET,
                                      .dstBinding = i < n ? i : 1,
                                      .descriptorCount = 1,
                                      .descriptorType = i < n ? VK_DESCRIPTOR_TYPE_STORAGE_BUFFER
                                                              : VK_DESCRIPTOR_TYPE_UNIFORM_BUFFER,
                                      .pBufferInfo = &inf[i]};
    }
    pushdesc(c, VK_PIPELINE_BIND_POINT_COMPUTE, p->pl, 0, n + (ubo ? 1 : 0), w);
}
static void membar(VkCommandBuffer c, int kind)
{
    if (kind == 0) {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .dstAccessMask =
                                  VK_ACCESS_SHADER_READ_BIT | VK_ACCESS_SHADER_WRITE_BIT};
        vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    } else if (kind == 1) {
        VkMemoryBarrier2 mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER_2,
                               .srcStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                               .srcAccessMask = VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT,
                               .dstStageMask = VK_PIPELINE_STAGE_2_COMPUTE_SHADER_BIT,
                               .dstAccessMask = VK_ACCESS_2_SHADER_STORAGE_READ_BIT |
                                                VK_ACCESS_2_SHADER_STORAGE_WRITE_BIT};
        VkDependencyInfo di = {.sType = VK_STRUCTURE_TYPE_DEPENDENCY_INFO,
                               .memoryBarrierCount = 1,
                               .pMemoryBarriers = &mb};
        vkCmdPipelineBarrier2(c, &di);
    } else {
        /* execution only + memory barrier with all-commands (what a generic runtime emits) */
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_MEMORY_WRITE_BIT,
                              .dstAccessMask =
                                  VK_ACCESS_MEMORY_READ_BIT | VK_ACCESS_MEMORY_WRITE_BIT};
        vkCmdPipelineBarrier(c, VK_PIPELINE_STAGE_ALL_COMMANDS_BIT,
                             VK_PIPELINE_STAGE_ALL_COMMANDS_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    }
}

static void init(void)
{
    VkApplicationInfo ai = {.sType = VK_STRUCTURE_TYPE_APPLICATION_INFO,
                            .apiVersion = VK_API_VERSION_1_3};
    VkInstanceCreateInfo ici = {.sType = VK_STRUCTURE_TYPE_INSTANCE_CREATE_INFO,
                                .pApplicationInfo = &ai};
    CK(vkCreateInstance(&ici, NULL, &inst));
    uint32_t n = 8;
    VkPhysicalDevice pds[8];
    CK(vkEnumeratePhysicalDevices(inst, &n, pds));
    pd = pds[0];
    for (uint32_t i = 0; i < n; i++) {
        vkGetPhysicalDeviceProperties(pds[i], &props);
        if (props.deviceType == VK_PHYSICAL_DEVICE_TYPE_DISCRETE_GPU) {
            pd = pds[i];
            break;
        }
    }
    vkGetPhysicalDeviceProperties(pd, &props);
    vkGetPhysicalDeviceMemoryProperties(pd, &mp);
    printf("device %s api %u.%u\n", props.deviceName, VK_API_VERSION_MAJOR(props.apiVersion),
           VK_API_VERSION_MINOR(props.apiVersion));
    uint32_t nf = 16;
    VkQueueFamilyProperties qf[16];
    vkGetPhysicalDeviceQueueFamilyProperties(pd, &nf, qf);
    for (uint32_t i = 0; i < nf; i++) {
        VkQueueFlags f = qf[i].queueFlags;
        printf("family %u flags 0x%x count %u tsbits %u gran %ux%ux%u\n", i, f, qf[i].queueCount,
               qf[i].timestampValidBits, qf[i].minImageTransferGranularity.width,
               qf[i].minImageTransferGranularity.height, qf[i].minImageTransferGranularity.depth);
        int k = (f & VK_QUEUE_GRAPHICS_BIT)   ? GC
                : (f & VK_QUEUE_COMPUTE_BIT)  ? C
                : (f & VK_QUEUE_TRANSFER_BIT) ? T
                                              : -1;
        if (k == C && fam[C] != ~0u) k = fam[C2] == ~0u ? C2 : C3;
        if (k >= 0 && fam[k] == ~0u) {
            fam[k] = i;
            famq[k] = qf[i].queueCount;
            famts[k] = qf[i].timestampValidBits;
        }
    }
    float prio[2] = {1, 1};
    VkDeviceQueueCreateInfo qci[NF];
    uint32_t nq = 0;
    for (int k = 0; k < NF; k++)
        if (fam[k] != ~0u) {
            qci[nq] = (VkDeviceQueueCreateInfo){.sType = VK_STRUCTURE_TYPE_DEVICE_QUEUE_CREATE_INFO,
                                                .queueFamilyIndex = fam[k],
                                                .queueCount = (k == T && famq[k] > 1) ? 2 : 1,
                                                .pQueuePriorities = prio};
            uniq[nuniq++] = fam[k];
            nq++;
        }
    VkPhysicalDeviceVulkan12Features f12 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_2_FEATURES, .timelineSemaphore = 1};
    VkPhysicalDeviceVulkan13Features f13 = {
        .sType = VK_STRUCTURE_TYPE_PHYSICAL_DEVICE_VULKAN_1_3_FEATURES,
        .pNext = &f12,
        .synchronization2 = 1};
    const char *exts[] = {"VK_KHR_push_descriptor", "VK_EXT_external_memory_host"};
    VkDeviceCreateInfo dci = {.sType = VK_STRUCTURE_TYPE_DEVICE_CREATE_INFO,
                              .pNext = &f13,
                              .queueCreateInfoCount = nq,
                              .pQueueCreateInfos = qci,
                              .enabledExtensionCount = 2,
                              .ppEnabledExtensionNames = exts};
    CK(vkCreateDevice(pd, &dci, NULL, &dev));
    for (int k = 0; k < NF; k++)
        if (fam[k] != ~0u) {
            vkGetDeviceQueue(dev, fam[k], 0, &q[k]);
            VkCommandPoolCreateInfo pci = {.sType = VK_STRUCTURE_TYPE_COMMAND_POOL_CREATE_INFO,
                                           .flags = VK_COMMAND_POOL_CREATE_RESET_COMMAND_BUFFER_BIT,
                                           .queueFamilyIndex = fam[k]};
            CK(vkCreateCommandPool(dev, &pci, NULL, &pool[k]));
        }
    if (fam[T] != ~0u && famq[T] > 1) vkGetDeviceQueue(dev, fam[T], 1, &q_t2);
    pushdesc = (PFN_vkCmdPushDescriptorSetKHR)vkGetDeviceProcAddr(dev, "vkCmdPushDescriptorSetKHR");
    hostptrprops = (PFN_vkGetMemoryHostPointerPropertiesEXT)vkGetDeviceProcAddr(
        dev, "vkGetMemoryHostPointerPropertiesEXT");
    VkQueryPoolCreateInfo qpci = {.sType = VK_STRUCTURE_TYPE_QUERY_POOL_CREATE_INFO,
                                  .queryType = VK_QUERY_TYPE_TIMESTAMP,
                                  .queryCount = 64};
    CK(vkCreateQueryPool(dev, &qpci, NULL, &qp));
    VkSemaphoreTypeCreateInfo st = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_TYPE_CREATE_INFO,
                                    .semaphoreType = VK_SEMAPHORE_TYPE_TIMELINE};
    VkSemaphoreCreateInfo sci = {.sType = VK_STRUCTURE_TYPE_SEMAPHORE_CREATE_INFO, .pNext = &st};
    CK(vkCreateSemaphore(dev, &sci, NULL, &tl));
}

/* ---- A: host <-> device DMA on each queue family ---- */
static void test_transfers(void)
{
    const VkDeviceSize S = 64ull << 20;
    buf d = mkbuf(S, DEVMEM, NULL);
    buf pinned = mkbuf(S, HOSTMEM, NULL);
    void *user = aligned_alloc(4096, S);
    memset(user, 1, S);
    memset(pinned.map, 2, S);
    buf imp = mkbuf(S, VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT, 0, user);
    buf *hosts[2] = {&pinned, &imp};
    const char *hn[2] = {"pinned", "imported"};
    for (int f = 0; f < NF; f++) {
        if (fam[f] == ~0u) continue;
        VkCommandBuffer c = newcmd(f);
        for (int h = 0; h < 2; h++)
            for (int dir = 0; dir < 2; dir++) {
                double v[12];
                for (int r = 0; r < 12; r++) {
                    begin(c);
                    VkBufferCopy reg = {0, 0, S};
                    if (dir == 0)
                        vkCmdCopyBuffer(c, hosts[h]->b, d.b, 1, &reg);
                    else
                        vkCmdCopyBuffer(c, d.b, hosts[h]->b, 1, &reg);
                    CK(vkEndCommandBuffer(c));
                    double t0 = now();
                    uint64_t x = submit(q[f], c);
                    spinv(x);
                    v[r] = S / (now() - t0) * 1e-9;
                }
                printf("xfer fam=%s %s %s %.1f GB/s\n", fname[f], hn[h], dir ? "d2h" : "h2d",
                       median(v, 12));
            }
    }
    if (q_t2) {
        VkCommandBuffer c1 = newcmd(T), c2 = newcmd(T);
        for (int dir = 0; dir < 2; dir++) {
            double v[12];
            for (int r = 0; r < 12; r++) {
                VkBufferCopy r1 = {0, 0, S / 2}, r2 = {S / 2, S / 2, S / 2};
                begin(c1);
                begin(c2);
                if (dir == 0) {
                    vkCmdCopyBuffer(c1, pinned.b, d.b, 1, &r1);
                    vkCmdCopyBuffer(c2, pinned.b, d.b, 1, &r2);
                } else {
                    vkCmdCopyBuffer(c1, d.b, pinned.b, 1, &r1);
                    vkCmdCopyBuffer(c2, d.b, pinned.b, 1, &r2);
                }
                CK(vkEndCommandBuffer(c1));
                CK(vkEndCommandBuffer(c2));
                double t0 = now();
                submit(q[T], c1);
                uint64_t x = submit(q_t2, c2);
                spinv(x);
                v[r] = S / (now() - t0) * 1e-9;
            }
            printf("xfer two-transfer-queues pinned %s %.1f GB/s\n", dir ? "d2h" : "h2d",
                   median(v, 12));
        }
    }
    /* both directions at once on separate queues */
    freebuf(&imp);
    free(user);
    freebuf(&pinned);
    freebuf(&d);
}

/* ---- B: dependent dispatch chains ---- */
static void test_dependent(void)
{
    buf data = mkbuf(4096, DEVMEM, NULL), info = mkbuf(256, DEVMEM, NULL);
    VkCommandBuffer c = newcmd(GC);
    begin(c);
    uint32_t iv[2] = {256, 1};
    vkCmdUpdateBuffer(c, info.b, 0, 8, iv);
    vkCmdFillBuffer(c, data.b, 0, 4096, 0);
    runwait(GC, c);
    kpipe p_pc = mkpipe(tiny_pc_spv, tiny_pc_spv_len, 1, 0, 8, 0);
    kpipe p_pc64 = mkpipe(tiny_pc_spv, tiny_pc_spv_len, 1, 0, 64, 0);
    kpipe p_buf = mkpipe(tiny_buf_spv, tiny_buf_spv_len, 2, 0, 0, 0);
    kpipe p_ubo = mkpipe(tiny_ubo_spv, tiny_ubo_spv_len, 1, 1, 0, 0);
    kpipe p_none = mkpipe(tiny_none_spv, tiny_none_spv_len, 1, 0, 0, 0);
    struct {
        const char *n;
        kpipe *p;
        int mode;
    } vs[] = {{"pc8", &p_pc, 0},
              {"pc64range", &p_pc64, 0},
              {"storage-info", &p_buf, 1},
              {"ubo-info", &p_ubo, 2},
              {"no-info", &p_none, 3}};
    const int N = 1000;
    for (int bk = 0; bk < 3; bk++)
        for (unsigned vi = 0; vi < sizeof vs / sizeof vs[0]; vi++)
            for (int rebind = 0; rebind < 2; rebind++) {
                double v[7];
                for (int r = 0; r < 7; r++) {
                    begin(c);
                    vkCmdResetQueryPool(c, qp, 0, 2);
                    vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
                    kpipe *p = vs[vi].p;
                    buf *bs[2] = {&data, &info};
                    for (int i = 0; i < N; i++) {
                        if (i) membar(c, bk);
                        if (rebind || !i) {
                            vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, p->p);
                            bindbufs(c, p, bs, vs[vi].mode == 1 ? 2 : 1,
                                     vs[vi].mode == 2 ? &info : NULL);
                        }
                        if (vs[vi].mode == 0)
                            vkCmdPushConstants(c, p->pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
                        vkCmdDispatch(c, 4, 1, 1);
                    }
                    vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
                    runwait(GC, c);
                    v[r] = tsread(0) / N * 1e6;
                }
                printf("dep barrier=%s info=%s rebind=%d %.3f us/launch\n",
                       bk == 0   ? "mem"
                       : bk == 1 ? "sync2"
                                 : "allcmd",
                       vs[vi].n, rebind, median(v, 7));
            }
    freebuf(&data);
    freebuf(&info);
}

/* ---- C: copy and vector-add kernels ---- */
static void test_copy(void)
{
    const VkDeviceSize S = 1ull << 30;
    buf a = mkbuf(S, DEVMEM, NULL), b = mkbuf(S, DEVMEM, NULL), cc = mkbuf(S, DEVMEM, NULL);
    VkCommandBuffer c = newcmd(GC);
    begin(c);
    vkCmdFillBuffer(c, a.b, 0, S, 0x3f800000);
    vkCmdFillBuffer(c, b.b, 0, S, 0x40000000);
    runwait(GC, c);
    const unsigned char *code[3] = {copy1_spv, copy2_spv, copy4_spv};
    unsigned len[3] = {copy1_spv_len, copy2_spv_len, copy4_spv_len};
    int Ks[3] = {1, 2, 4}, wgs[3] = {256, 512, 1024};
    uint32_t count = (uint32_t)(S / 16);
    for (int k = 0; k < 3; k++)
        for (int w = 0; w < 3; w++) {
            kpipe p = mkpipe(code[k], len[k], 2, 0, 4, wgs[w]);
            uint32_t full = count / wgs[w] / Ks[k];
            uint32_t gs[6] = {1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, full};
            for (int g = 0; g < 6; g++) {
                if (gs[g] > full) continue;
                double v[5];
                for (int r = 0; r < 5; r++) {
                    begin(c);
                    vkCmdResetQueryPool(c, qp, 0, 2);
                    vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
                    buf *bs[2] = {&a, &b};
                    bindbufs(c, &p, bs, 2, NULL);
                    vkCmdPushConstants(c, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &count);
                    vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
                    vkCmdDispatch(c, gs[g], 1, 1);
                    vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
                    runwait(GC, c);
                    v[r] = 2.0 * S / tsread(0) * 1e-9;
                }
                printf("copy K=%d wg=%d groups=%u %.0f GB/s\n", Ks[k], wgs[w], gs[g], median(v, 5));
            }
        }
    for (int f = 0; f < NF; f++) {
        if (fam[f] == ~0u) continue;
        VkCommandBuffer cf = newcmd(f);
        double v[5];
        for (int r = 0; r < 5; r++) {
            begin(cf);
            VkBufferCopy reg = {0, 0, S};
            vkCmdCopyBuffer(cf, a.b, b.b, 1, &reg);
            CK(vkEndCommandBuffer(cf));
            double t0 = now();
            uint64_t x = submit(q[f], cf);
            spinv(x);
            v[r] = 2.0 * S / (now() - t0) * 1e-9;
        }
        printf("copy vkCmdCopyBuffer fam=%s %.0f GB/s (wall)\n", fname[f], median(v, 5));
    }
    uint32_t n4 = (uint32_t)(S / 16);
    for (int w = 0; w < 3; w++) {
        kpipe p = mkpipe(vadd_spv, vadd_spv_len, 3, 0, 4, wgs[w]);
        uint32_t full = n4 / wgs[w];
        uint32_t gs[6] = {1u << 14, 1u << 15, 1u << 16, 1u << 17, 1u << 18, full};
        for (int g = 0; g < 6; g++) {
            if (gs[g] > full) continue;
            double v[5];
            for (int r = 0; r < 5; r++) {
                begin(c);
                vkCmdResetQueryPool(c, qp, 0, 2);
                vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
                buf *bs[3] = {&a, &b, &cc};
                bindbufs(c, &p, bs, 3, NULL);
                vkCmdPushConstants(c, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &n4);
                vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
                vkCmdDispatch(c, gs[g], 1, 1);
                vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
                runwait(GC, c);
                v[r] = 3.0 * S / tsread(0) * 1e-9;
            }
            printf("vadd wg=%d groups=%u %.0f GB/s\n", wgs[w], gs[g], median(v, 5));
        }
    }
    freebuf(&a);
    freebuf(&b);
    freebuf(&cc);
}

/* ---- D: round trips ---- */
static void report(const char *name, double *v, int n)
{
    double m = median(v, n);
    printf("rt %s median %.2f us p10 %.2f p90 %.2f\n", name, m, pct(v, n, 0.1), pct(v, n, 0.9));
}
static void test_roundtrip(void)
{
    buf data = mkbuf(4096, DEVMEM, NULL);
    buf word = mkbuf(4096, HOSTMEM, NULL);
    kpipe p = mkpipe(tiny_pc_spv, tiny_pc_spv_len, 1, 0, 8, 0);
    kpipe pm = mkpipe(mark_spv, mark_spv_len, 1, 0, 4, 0);
    uint32_t iv[2] = {256, 1};
    buf *bs[1] = {&data};
    buf *ws[1] = {&word};
    enum { R = 400 };
    static double v[R];
    VkCommandBuffer c = newcmd(GC);
    /* D1: record each time, submit, poll timeline */
    for (int r = 0; r < R; r++) {
        double t0 = now();
        begin(c);
        vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
        bindbufs(c, &p, bs, 1, NULL);
        vkCmdPushConstants(c, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
        vkCmdDispatch(c, 4, 1, 1);
        CK(vkEndCommandBuffer(c));
        spinv(submit(q[GC], c));
        v[r] = (now() - t0) * 1e6;
    }
    report("record+submit+poll_timeline", v, R);
    /* pre-recorded */
    VkCommandBuffer pre = newcmd(GC);
    begin(pre);
    vkCmdBindPipeline(pre, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
    bindbufs(pre, &p, bs, 1, NULL);
    vkCmdPushConstants(pre, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
    vkCmdDispatch(pre, 4, 1, 1);
    CK(vkEndCommandBuffer(pre));
    for (int r = 0; r < R; r++) {
        double t0 = now();
        spinv(submit(q[GC], pre));
        v[r] = (now() - t0) * 1e6;
    }
    report("prerecorded+poll_timeline", v, R);
    for (int r = 0; r < R; r++) {
        double t0 = now();
        waitv(submit(q[GC], pre));
        v[r] = (now() - t0) * 1e6;
    }
    report("prerecorded+vkWaitSemaphores", v, R);
    for (int r = 0; r < R; r++) {
        double t0 = now();
        uint64_t x = submit(q[GC], pre);
        v[r] = (now() - t0) * 1e6;
        spinv(x);
    }
    report("vkQueueSubmit_only_1dispatch", v, R);
    {
        uint64_t x;
        double t0 = now();
        for (int i = 0; i < 10000; i++)
            vkGetSemaphoreCounterValue(dev, tl, &x);
        printf("rt vkGetSemaphoreCounterValue %.3f us/call\n", (now() - t0) / 10000 * 1e6);
    }
    /* completion word: fill after the dispatch */
    VkCommandBuffer pw = newcmd(GC);
    begin(pw);
    vkCmdBindPipeline(pw, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
    bindbufs(pw, &p, bs, 1, NULL);
    vkCmdPushConstants(pw, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
    vkCmdDispatch(pw, 4, 1, 1);
    {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_SHADER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT};
        vkCmdPipelineBarrier(pw, VK_PIPELINE_STAGE_COMPUTE_SHADER_BIT,
                             VK_PIPELINE_STAGE_TRANSFER_BIT, 0, 1, &mb, 0, NULL, 0, NULL);
    }
    vkCmdFillBuffer(pw, word.b, 0, 4, 1);
    {
        VkMemoryBarrier mb = {.sType = VK_STRUCTURE_TYPE_MEMORY_BARRIER,
                              .srcAccessMask = VK_ACCESS_TRANSFER_WRITE_BIT,
                              .dstAccessMask = VK_ACCESS_HOST_READ_BIT};
        vkCmdPipelineBarrier(pw, VK_PIPELINE_STAGE_TRANSFER_BIT, VK_PIPELINE_STAGE_HOST_BIT, 0, 1,
                             &mb, 0, NULL, 0, NULL);
    }
    CK(vkEndCommandBuffer(pw));
    volatile uint32_t *wp = word.map;
    for (int r = 0; r < R; r++) {
        *wp = 0;
        double t0 = now();
        uint64_t x = submit(q[GC], pw);
        while (*wp != 1)
            ;
        v[r] = (now() - t0) * 1e6;
        spinv(x);
    }
    report("prerecorded+fill_word+poll_word", v, R);
    /* completion word written by a 1-thread shader after a barrier */
    VkCommandBuffer pk = newcmd(GC);
    begin(pk);
    vkCmdBindPipeline(pk, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
    bindbufs(pk, &p, bs, 1, NULL);
    vkCmdPushConstants(pk, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
    vkCmdDispatch(pk, 4, 1, 1);
    membar(pk, 0);
    uint32_t one = 1;
    vkCmdBindPipeline(pk, VK_PIPELINE_BIND_POINT_COMPUTE, pm.p);
    bindbufs(pk, &pm, ws, 1, NULL);
    vkCmdPushConstants(pk, pm.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 4, &one);
    vkCmdDispatch(pk, 1, 1, 1);
    CK(vkEndCommandBuffer(pk));
    for (int r = 0; r < R; r++) {
        *wp = 0;
        double t0 = now();
        uint64_t x = submit(q[GC], pk);
        while (*wp != 1)
            ;
        v[r] = (now() - t0) * 1e6;
        spinv(x);
    }
    report("prerecorded+shader_word+poll_word", v, R);
    /* timeline poll with the word variant, to see the signal latency difference in one run */
    for (int r = 0; r < R; r++) {
        *wp = 0;
        double t0 = now();
        uint64_t x = submit(q[GC], pk);
        while (*wp != 1)
            ;
        double t1 = now();
        spinv(x);
        v[r] = (now() - t1) * 1e6;
        (void)t0;
    }
    report("extra_after_word_until_timeline", v, R);
    /* E: 1000-dispatch pre-recorded command buffer: submit host cost */
    VkCommandBuffer big = newcmd(GC);
    begin(big);
    for (int i = 0; i < 1000; i++) {
        if (i) membar(big, 0);
        vkCmdBindPipeline(big, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
        bindbufs(big, &p, bs, 1, NULL);
        vkCmdPushConstants(big, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
        vkCmdDispatch(big, 4, 1, 1);
    }
    CK(vkEndCommandBuffer(big));
    for (int r = 0; r < 100; r++) {
        double t0 = now();
        uint64_t x = submit(q[GC], big);
        v[r] = (now() - t0) * 1e6;
        spinv(x);
    }
    report("vkQueueSubmit_only_1000dispatch", v, 100);
    for (int r = 0; r < 100; r++) {
        double t0 = now();
        uint64_t x = submit(q[C] ? q[C] : q[GC], pre);
        v[r] = (now() - t0) * 1e6;
        spinv(x);
    }
    freebuf(&data);
    freebuf(&word);
}

static void test_families(void)
{
    buf data = mkbuf(4096, DEVMEM, NULL), info = mkbuf(256, DEVMEM, NULL);
    kpipe p = mkpipe(tiny_pc_spv, tiny_pc_spv_len, 1, 0, 8, 0);
    kpipe pu = mkpipe(tiny_ubo_spv, tiny_ubo_spv_len, 1, 1, 0, 0);
    uint32_t iv[2] = {256, 1};
    buf *bs[1] = {&data};
    enum { R = 300 };
    static double v[R];
    for (int f = 0; f < NF; f++) {
        if (fam[f] == ~0u || f == T) continue;
        VkCommandBuffer c = newcmd(f);
        begin(c);
        vkCmdUpdateBuffer(c, info.b, 0, 8, iv);
        runwait(f, c);
        VkCommandBuffer pre = newcmd(f);
        begin(pre);
        vkCmdBindPipeline(pre, VK_PIPELINE_BIND_POINT_COMPUTE, p.p);
        bindbufs(pre, &p, bs, 1, NULL);
        vkCmdPushConstants(pre, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
        vkCmdDispatch(pre, 4, 1, 1);
        CK(vkEndCommandBuffer(pre));
        for (int r = 0; r < R; r++) {
            double t0 = now();
            spinv(submit(q[f], pre));
            v[r] = (now() - t0) * 1e6;
        }
        char nm[64];
        snprintf(nm, sizeof nm, "fam=%s(%u) prerecorded+poll", fname[f], fam[f]);
        report(nm, v, R);
        for (int r = 0; r < R; r++) {
            double t0 = now();
            uint64_t x = submit(q[f], pre);
            v[r] = (now() - t0) * 1e6;
            spinv(x);
        }
        snprintf(nm, sizeof nm, "fam=%s(%u) submit_only", fname[f], fam[f]);
        report(nm, v, R);
        for (int u = 0; u < 2; u++) {
            double w[7];
            for (int r = 0; r < 7; r++) {
                begin(c);
                vkCmdResetQueryPool(c, qp, 0, 2);
                vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
                kpipe *pp = u ? &pu : &p;
                vkCmdBindPipeline(c, VK_PIPELINE_BIND_POINT_COMPUTE, pp->p);
                for (int i = 0; i < 1000; i++) {
                    if (i) membar(c, 0);
                    bindbufs(c, pp, bs, 1, u ? &info : NULL);
                    if (!u) vkCmdPushConstants(c, p.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
                    vkCmdDispatch(c, 4, 1, 1);
                }
                vkCmdWriteTimestamp(c, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
                runwait(f, c);
                w[r] = tsread(0) / 1000 * 1e6;
            }
            printf("fam=%s(%u) dep %s pushdesc-each %.3f us/launch\n", fname[f], fam[f],
                   u ? "ubo" : "pc8", median(w, 7));
        }
    }
    freebuf(&data);
    freebuf(&info);
}

/* H: the bench's shape: one group of 64, barrier + dispatch only, metadata forms and memory */
static void test_bench_shape(void)
{
    buf data = mkbuf(4096, DEVMEM, NULL), info = mkbuf(256, DEVMEM, NULL);
    buf bar = mkbuf(256,
                    VK_MEMORY_PROPERTY_DEVICE_LOCAL_BIT | VK_MEMORY_PROPERTY_HOST_VISIBLE_BIT |
                        VK_MEMORY_PROPERTY_HOST_COHERENT_BIT,
                    0, NULL);
    uint32_t iv[2] = {64, 1};
    memcpy(bar.map, iv, 8);
    VkCommandBuffer c = newcmd(GC);
    begin(c);
    vkCmdUpdateBuffer(c, info.b, 0, 8, iv);
    vkCmdFillBuffer(c, data.b, 0, 4096, 0);
    runwait(GC, c);
    kpipe p_pc = mkpipe(tiny_pc_spv, tiny_pc_spv_len, 1, 0, 8, 0);
    kpipe p_ubo = mkpipe(tiny_ubo_spv, tiny_ubo_spv_len, 1, 1, 0, 0);
    kpipe p_none = mkpipe(tiny_none_spv, tiny_none_spv_len, 1, 0, 0, 0);
    struct {
        const char *n;
        kpipe *p;
        buf *u;
    } vs[] = {{"pc8", &p_pc, NULL},
              {"ubo-vram", &p_ubo, &info},
              {"ubo-bar", &p_ubo, &bar},
              {"no-info", &p_none, NULL}};
    for (int f = 0; f < NF; f++) {
        if (fam[f] == ~0u || f == T) continue;
        VkCommandBuffer cf = newcmd(f);
        for (unsigned vi = 0; vi < 4; vi++)
            for (int groups = 1; groups <= 4; groups *= 4) {
                double w[7];
                for (int r = 0; r < 7; r++) {
                    begin(cf);
                    vkCmdResetQueryPool(cf, qp, 0, 2);
                    vkCmdWriteTimestamp(cf, VK_PIPELINE_STAGE_TOP_OF_PIPE_BIT, qp, 0);
                    vkCmdBindPipeline(cf, VK_PIPELINE_BIND_POINT_COMPUTE, vs[vi].p->p);
                    buf *bs[1] = {&data};
                    bindbufs(cf, vs[vi].p, bs, 1, vs[vi].u);
                    if (vs[vi].p == &p_pc)
                        vkCmdPushConstants(cf, p_pc.pl, VK_SHADER_STAGE_COMPUTE_BIT, 0, 8, iv);
                    for (int i = 0; i < 1000; i++) {
                        if (i) membar(cf, 0);
                        vkCmdDispatch(cf, groups, 1, 1);
                    }
                    vkCmdWriteTimestamp(cf, VK_PIPELINE_STAGE_BOTTOM_OF_PIPE_BIT, qp, 1);
                    runwait(f, cf);
                    w[r] = tsread(0) / 1000 * 1e6;
                }
                printf("shape fam=%s %s groups=%d %.3f us/launch\n", fname[f], vs[vi].n, groups,
                       median(w, 7));
            }
    }
    freebuf(&data);
    freebuf(&info);
    freebuf(&bar);
}

/* ---- F: cost of waking a sleeping thread ---- */
static pthread_mutex_t mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t cv = PTHREAD_COND_INITIALIZER;
static int flag;
static atomic_int spinflag;
static void *sleeper(void *a)
{
    (void)a;
    pthread_mutex_lock(&mu);
    for (;;) {
        while (!flag)
            pthread_cond_wait(&cv, &mu);
        if (flag < 0) break;
        flag = 0;
    }
    pthread_mutex_unlock(&mu);
    return NULL;
}
static void *spinner(void *a)
{
    (void)a;
    for (;;) {
        int f = atomic_load(&spinflag);
        if (f < 0) break;
        if (f) atomic_store(&spinflag, 0);
    }
    return NULL;
}
static void test_wake(void)
{
    pthread_t t;
    pthread_create(&t, NULL, sleeper, NULL);
    static double v[300];
    for (int r = 0; r < 300; r++) {
        usleep(500);
        double t0 = now();
        pthread_mutex_lock(&mu);
        flag = 1;
        pthread_cond_signal(&cv);
        pthread_mutex_unlock(&mu);
        v[r] = (now() - t0) * 1e6;
    }
    report("condvar_signal_to_sleeper", v, 300);
    pthread_mutex_lock(&mu);
    flag = -1;
    pthread_cond_signal(&cv);
    pthread_mutex_unlock(&mu);
    pthread_join(t, NULL);
    pthread_create(&t, NULL, spinner, NULL);
    for (int r = 0; r < 300; r++) {
        usleep(500);
        double t0 = now();
        atomic_store(&spinflag, 1);
        v[r] = (now() - t0) * 1e6;
    }
    report("atomic_handoff_to_spinner", v, 300);
    atomic_store(&spinflag, -1);
    pthread_join(t, NULL);
}

int main(int argc, char **argv)
{
    setvbuf(stdout, NULL, _IOLBF, 0);
    init();
    const char *which = argc > 1 ? argv[1] : "ABCDF";
    if (strchr(which, 'F')) test_wake();
    if (strchr(which, 'G')) test_families();
    if (strchr(which, 'H')) test_bench_shape();
    if (strchr(which, 'D')) test_roundtrip();
    if (strchr(which, 'B')) test_dependent();
    if (strchr(which, 'A')) test_transfers();
    if (strchr(which, 'C')) test_copy();
    vkDeviceWaitIdle(dev);
    return 0;
}
