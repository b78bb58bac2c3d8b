/* `cubec info --topology [--json]`: the path cubec uses between every ordered pair of devices
 * (cubec_device_get_path), its link class and the bandwidth of a small copy measured on it now
 * (cubec_device_measure_path), as a matrix in the manner of IREE's HAL topology.
 *
 * Every device of the selected backend is opened. With only one present it is opened twice, the
 * second open standing for another device: that is how tests on one lavapipe see a pair (0,1),
 * and the output says so. */
#include "cli.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

/* The copy measured per pair: small, so the command stays quick on a CPU device. */
#define TOPOLOGY_MEASURE_BYTES (4u << 20)

typedef struct topology_pair {
    uint32_t src, dst;
    cubec_path_info info;
    char error[256]; /* the measurement failed: why (the path is still printed) */
} topology_pair;

static void json_string(const char *s)
{
    putchar('"');
    for (; *s; s++) {
        unsigned char c = (unsigned char)*s;
        if (c == '"' || c == '\\')
            printf("\\%c", c);
        else if (c < 0x20)
            printf("\\u%04x", c);
        else
            putchar(c);
    }
    putchar('"');
}

static void print_json(cubec_device_info *infos, uint32_t n, int doubled, topology_pair *pairs)
{
    printf("{\"devices\": [");
    for (uint32_t i = 0; i < n; i++) {
        printf("%s{\"index\": %u, \"name\": ", i ? ", " : "", i);
        json_string(infos[i].name);
        printf(", \"second_open_of\": %d}", doubled && i == 1 ? 0 : -1);
    }
    printf("], \"pairs\": [");
    for (uint32_t k = 0; k < n * n; k++) {
        topology_pair *p = &pairs[k];
        printf("%s{\"src\": %u, \"dst\": %u, \"path\": ", k ? ", " : "", p->src, p->dst);
        json_string(cubec_path_name(p->info.path));
        printf(", \"link\": ");
        json_string(cubec_link_class_name(p->info.link));
        printf(", \"bandwidth_gbs\": %.3f, \"reason\": ", p->info.bandwidth_gbs);
        json_string(p->info.reason);
        printf(", \"error\": ");
        json_string(p->error);
        printf("}");
    }
    printf("]}\n");
}

static void print_table(cubec_device_info *infos, uint32_t n, int doubled, topology_pair *pairs)
{
    printf("topology of %u devices%s\n", n,
           doubled ? " (one device present: device 1 is a second open of device 0)" : "");
    for (uint32_t i = 0; i < n; i++)
        printf("  %u: %s\n", i, infos[i].name);
    printf("%-4s %-4s %-13s %-21s %9s  %s\n", "src", "dst", "path", "link", "GB/s", "notes");
    for (uint32_t k = 0; k < n * n; k++) {
        topology_pair *p = &pairs[k];
        printf("%-4u %-4u %-13s %-21s %9.3f  %s%s%s\n", p->src, p->dst,
               cubec_path_name(p->info.path), cubec_link_class_name(p->info.link),
               p->info.bandwidth_gbs, p->info.reason, p->error[0] ? "; measuring failed: " : "",
               p->error);
    }
}

int cli_topology_main(int json)
{
    uint32_t count = 0;
    if (cli_failed("info", cubec_device_get_count(&count), "counting devices"))
        return CLI_EXIT_RUNTIME;
    if (count == 0) {
        fprintf(stderr, "cubec info: no devices\n");
        return CLI_EXIT_RUNTIME;
    }
    int doubled = count == 1;
    uint32_t n = doubled ? 2 : count;
    cubec_device **devices = calloc(n, sizeof *devices);
    cubec_device_info *infos = calloc(n, sizeof *infos);
    topology_pair *pairs = calloc((size_t)n * n, sizeof *pairs);
    int exit_code = CLI_EXIT_OK;
    if (!devices || !infos || !pairs) {
        fprintf(stderr, "cubec info: host out of memory\n");
        exit_code = CLI_EXIT_RUNTIME;
        goto done;
    }
    for (uint32_t i = 0; i < n && exit_code == CLI_EXIT_OK; i++) {
        cubec_device_desc desc = CUBEC_DEVICE_DESC_INIT;
        desc.select_by_index = 1;
        desc.index = doubled ? 0 : i;
        char what[64];
        snprintf(what, sizeof what, "opening device %u", desc.index);
        infos[i] = (cubec_device_info)CUBEC_DEVICE_INFO_INIT;
        if (cli_failed("info", cubec_device_open(&desc, &devices[i]), what) ||
            cli_failed("info", cubec_device_get_info(devices[i], &infos[i]), what))
            exit_code = CLI_EXIT_RUNTIME;
    }
    for (uint32_t k = 0; k < n * n && exit_code == CLI_EXIT_OK; k++) {
        topology_pair *p = &pairs[k];
        p->src = k / n;
        p->dst = k % n;
        p->info = (cubec_path_info)CUBEC_PATH_INFO_INIT;
        if (cli_failed("info", cubec_device_get_path(devices[p->src], devices[p->dst], &p->info),
                       "reading a path")) {
            exit_code = CLI_EXIT_RUNTIME;
            break;
        }
        if (p->info.path == CUBEC_PATH_NONE) continue;
        cubec_status err = cubec_device_measure_path(devices[p->src], devices[p->dst],
                                                     TOPOLOGY_MEASURE_BYTES, &p->info);
        if (err) {
            snprintf(p->error, sizeof p->error, "%s", cubec_status_message(err));
            cubec_status_free(err);
        }
    }
    if (exit_code == CLI_EXIT_OK) {
        if (json)
            print_json(infos, n, doubled, pairs);
        else
            print_table(infos, n, doubled, pairs);
    }
done:
    for (uint32_t i = 0; devices && i < n; i++)
        if (devices[i]) cubec_device_close(devices[i]);
    free(devices);
    free(infos);
    free(pairs);
    return exit_code;
}
