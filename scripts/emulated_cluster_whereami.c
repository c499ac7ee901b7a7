/* Probe of the emulated cluster (emulated_cluster.sh check): every rank finds
 * the network namespace it runs in (the /run/netns entry whose inode is its
 * own /proc/self/ns/net) and its eth0 IPv4 address, and the ranks gather
 * those lines to rank 0 with MPI_Gather, so a clean printout proves both
 * the placement and that MPI messages cross the emulated links. */
#include <arpa/inet.h>
#include <dirent.h>
#include <ifaddrs.h>
#include <mpi.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

enum { kLine = 128 };

static void own_namespace(char* name, size_t capacity) {
  struct stat own;
  snprintf(name, capacity, "(none found)");
  if (stat("/proc/self/ns/net", &own) != 0) return;
  DIR* dir = opendir("/run/netns");
  if (!dir) return;
  struct dirent* entry;
  while ((entry = readdir(dir)) != NULL) {
    char path[512];
    struct stat other;
    snprintf(path, sizeof path, "/run/netns/%s", entry->d_name);
    if (entry->d_name[0] != '.' && stat(path, &other) == 0 && other.st_ino == own.st_ino &&
        other.st_dev == own.st_dev) {
      snprintf(name, capacity, "%s", entry->d_name);
      break;
    }
  }
  closedir(dir);
}

static void eth0_address(char* address, size_t capacity) {
  struct ifaddrs* list = NULL;
  snprintf(address, capacity, "(no eth0)");
  if (getifaddrs(&list) != 0) return;
  for (struct ifaddrs* it = list; it; it = it->ifa_next) {
    if (it->ifa_addr && it->ifa_addr->sa_family == AF_INET && strcmp(it->ifa_name, "eth0") == 0) {
      inet_ntop(AF_INET, &((struct sockaddr_in*)it->ifa_addr)->sin_addr, address,
                (socklen_t)capacity);
      break;
    }
  }
  freeifaddrs(list);
}

int main(int argc, char** argv) {
  MPI_Init(&argc, &argv);
  int rank = 0, size = 1;
  MPI_Comm_rank(MPI_COMM_WORLD, &rank);
  MPI_Comm_size(MPI_COMM_WORLD, &size);
  char namespace_name[64], address[64], line[kLine];
  own_namespace(namespace_name, sizeof namespace_name);
  eth0_address(address, sizeof address);
  snprintf(line, sizeof line, "rank %d/%d: namespace %s, eth0 %s", rank, size, namespace_name,
           address);
  char* all = rank == 0 ? malloc((size_t)size * kLine) : NULL;
  MPI_Gather(line, kLine, MPI_CHAR, all, kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
  if (rank == 0) {
    for (int r = 0; r < size; ++r) printf("%s\n", all + (size_t)r * kLine);
    printf("(gathered to rank 0 with MPI_Gather over the emulated links)\n");
    free(all);
  }
  MPI_Finalize();
  return 0;
}
