/* ep_additions.h - prototypes of ../shared/API.md's MPI 4.0 additions (and two more calls
 * MPI has) as ep.h would declare them: generator_test appends them to ep.h and checks
 * that mpi/gen_mpi_wrappers.py maps the MPI calls onto them. */
int EP_Psend_init(const void *buf, int partitions, MPI_Count count, MPI_Datatype datatype,
                  int dest, int tag, EP_Comm comm, MPI_Info info, EP_Request *request);
int EP_Precv_init(void *buf, int partitions, MPI_Count count, MPI_Datatype datatype, int source,
                  int tag, EP_Comm comm, MPI_Info info, EP_Request *request);
int EP_Pready(int partition, EP_Request request);
int EP_Pready_range(int partition_low, int partition_high, EP_Request request);
int EP_Pready_list(int length, const int array_of_partitions[], EP_Request request);
int EP_Parrived(EP_Request request, int partition, int *flag);
int EP_Comm_dup_with_info(EP_Comm comm, MPI_Info info, EP_Comm *newcomm);
int EP_Comm_idup_with_info(EP_Comm comm, MPI_Info info, EP_Comm *newcomm, EP_Request *request);
int EP_Comm_set_info(EP_Comm comm, MPI_Info info);
int EP_Comm_get_info(EP_Comm comm, MPI_Info *info_used);
int EP_Send_c(const void *buf, MPI_Count count, MPI_Datatype datatype, int dest, int tag,
              EP_Comm comm);
int EP_Ialltoallv_c(const void *sendbuf, const MPI_Count sendcounts[], const MPI_Aint sdispls[],
                    MPI_Datatype sendtype, void *recvbuf, const MPI_Count recvcounts[],
                    const MPI_Aint rdispls[], MPI_Datatype recvtype, EP_Comm comm,
                    EP_Request *request);
int EP_Win_allocate_c(MPI_Aint size, MPI_Aint disp_unit, MPI_Info info, EP_Comm comm,
                      void *baseptr, EP_Win *win);
int EP_Isendrecv(const void *sendbuf, int sendcount, MPI_Datatype sendtype, int dest,
                 int sendtag, void *recvbuf, int recvcount, MPI_Datatype recvtype, int source,
                 int recvtag, EP_Comm comm, EP_Request *request);
int EP_Comm_remote_group(EP_Comm comm, EP_Group *group);
